"""Chat ids as file and folder names: the one escaping every per-chat store uses (memory
files, attachment folders), so a chat's things sit under the same name everywhere."""

from __future__ import annotations

import hashlib
from urllib.parse import quote


def file_name(value: str) -> str:
    """``value`` as one file name: every character but ASCII letters, digits, '-', '_', '.' and '~'
    escaped (no '/' survives, nor a name of dots alone), a long one cut and made unique with its digest."""
    name = quote(value, safe="-_", errors="surrogatepass")
    if name in (".", ".."):  # quote keeps dots: this folder, or the one above, holding every chat's
        name = name.replace(".", "%2E")
    if len(name) <= 100:
        return name
    return f"{name[:60]}~{hashlib.sha256(value.encode('utf-8', 'surrogatepass')).hexdigest()[:32]}"
