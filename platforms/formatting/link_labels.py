"""Whether a link's label shows another address than the one the link opens (`other_address`).

Slack shows a link's label alone, Discord masks a web link whose label holds no ``https://``, and Telegram shows the
label, its address only on a tap: ``[https://bank.example/login](https://evil.example/x)``, from a page the model
quotes or a member who told it what to say, would show the bank's address and open the other. The renderers write
such a label out followed by the link's own address. A label is read as its reader sees it (`as_seen`): without the
characters no font shows, in the letters it looks like (``һttps://bаnk.example``, a Cyrillic һ and а; fullwidth
``ｈｔｔｐｓ：／／``; ``аррӏе.com``, all Cyrillic, which a browser would show as ``xn--80ak6aa92e.com``), and an
address with no scheme is one too (``bank.example/login``, ``www.bank.example``, ``paypal.com``; not ``setup.py``).
"""

from __future__ import annotations

import re
import unicodedata
from urllib.parse import urlsplit

from platforms.formatting.bare_urls import as_read
from platforms.formatting.markdown import parser

_LETTERS = str.maketrans(
    # Cyrillic, Greek and Armenian letters, and a few Latin ones, drawn as an ASCII letter is in common fonts:
    # Unicode's confusables (UTS #39, confusables.txt) for the letters an address is written in, and no more.
    # Neither library on PyPI gives its skeleton: confusable_homoglyphs (900 KB of JSON read at import) maps
    # each character to a list of look-alikes (Cyrillic ӏ to i, not l); confusables (last released 2021) lists
    # every spelling a text could be a look-alike of.
    "асԁеһіјӏорԛѕԝхуАВСЕНІЈКМОРЅТХҮԚԜӀ"
    "αινορυϲϳΑΒΕΖΗΙΚΜΝΟΡΤΥΧϹͿ"
    "օոսհ"
    "ıȷɑɡǀİ"
    "ᎠᎡᎢᎥᎩᎪᎫᎬᎳᎷᎻᎽᏀᏂᏃᏏᏒᏔᏕᏙᏚᏞᏟᏢᏦᏧᏳᏴ"  # Cherokee and Lisu, whole scripts of look-alike capitals: ᎻTTPS, ꓑꓮꓬꓑꓮꓡ
    "ꓐꓑꓓꓔꓖꓗꓙꓚꓜꓝꓟꓠꓡꓢꓣꓦꓧꓪꓫꓬꓮꓰꓲꓳꓴ",
    "acdehijlopqswxyABCEHIJKMOPSTXYQWl"
    "aivopucjABEZHIKMNOPTYXCJ"
    "onuh"
    "ijaglI"
    "DRTiYAJEWMHYGhZbRWSVSLCPKdGB"
    "BPDTGKJCZFMNLSRVHWXYAElOU",
)
_PUNCTUATION = str.maketrans({
    # What reads as an address's ``.``, ``/`` or ``:`` and NFKC leaves as it is (it makes the fullwidth ``．／：``
    # and ``․`` ASCII): an ideographic full stop, which IDNA takes for a dot too; slashes; colons.
    "\u3002": ".", "\u06d4": ".", "\ua4f8": ".",
    "\u2215": "/", "\u2044": "/", "\u29f8": "/", "\u2571": "/",
    "\ua789": ":", "\u2236": ":", "\u0589": ":", "\u02f8": ":", "\u05c3": ":",
})
_WORD = re.compile(r"[^\W_]+")
_WEB = re.compile(r"\s*https?://\S+\s*\Z", re.IGNORECASE)
_HOST = re.compile(
    r"\s*((?:[^\W_](?:[^\W_]|-)*\.)+([^\W\d_]{2,})|(?:\d{1,3}\.){3}\d{1,3})([:/?#]\S*)?[.,;!]?\s*\Z")
"""An address written without its scheme: a host of two or more names (or an IPv4 one, ``192.168.0.1``), then a port,
path, query or fragment (or the root's dot, ``bank.example.``, or the sentence's mark, ``paypal.com,``)."""
_TOP_NAMES = frozenset(
    "com net org edu gov mil int info biz name pro mobi aero asia coop jobs tel travel museum xxx app dev page web "
    "online site website tech store shop blog cloud link live news wiki email mail bank finance money pay support help "
    "login secure account services network systems digital media art club xyz top icu vip one today world global "
    "example test invalid localhost".split())
"""Top names a host alone (no scheme, path or ``www.``) is read by: any of two letters (a country's, ``python.org``,
``bit.ly``, but `_FILE_TYPES`), one not in ASCII (``пример.рф``), and these: ``os.path.join``, ``re.sub``,
``np.array`` or ``torch.nn.Module``, a label naming code on the page it links to, are no address."""
_FILE_TYPES = frozenset(
    "py md rs sh js ts jsx tsx json yaml yml toml txt html htm css cfg ini conf lock log csv xml sql cpp hpp go rb "
    "java kt swift php ipynb pdf png jpg jpeg gif svg zip gz tgz whl exe dll docx xlsx pptx".split())
"""Ends of a name with no scheme, path or ``www.`` that name a file more often than a host: ``[setup.py](…)`` is a
file on the page it links to, ``[bank.com](…)`` a site."""


def as_seen(label: str) -> str:
    """``label`` as its reader takes it: without the characters no font shows (`as_read`), in NFKC (fullwidth forms
    ASCII), and each word whose every letter looks like an ASCII one (`_LETTERS`) in those (``bаnk``, ``аррӏе``): a
    word of its own script with a few such letters (``Москва``, ``пример``) reads as that script, and stays."""
    return unicodedata.normalize("NFKC", _WORD.sub(_latin, as_read(label))).translate(_PUNCTUATION)


def _latin(word: re.Match[str]) -> str:
    # Before NFKC, which makes a Greek lunate sigma, ϲ, a σ; after it for a word of fullwidth letters and look-alikes.
    latin = unicodedata.normalize("NFKC", word.group().translate(_LETTERS))
    return latin if latin.isascii() else word.group()


def other_address(label: str, href: str) -> bool:
    """Whether ``label`` reads as a web address (`as_seen`) that is not ``href``, the link's own. Its own address
    written otherwise (``https://x.org`` for ``https://x.org/``, a host in another case, or in its own script, which
    Markdown links as punycode; a host alone for a page on it, ``python.org`` for ``https://www.python.org/about``)
    is no other; one that only looks like it (``https://аррӏе.com`` for the punycode of those Cyrillic letters) is."""
    seen = as_seen(label)
    web = _WEB.match(seen)
    host = None if web else _HOST.match(seen)
    if not web and (host is None or not (host.group(3) or host.group(1).casefold().startswith("www.")
                                         or host.group(2) is None or _top_name(host.group(2).casefold()))):
        return False
    plain = as_read(label)
    # Only a label that looks like nothing else may be read as written too: with look-alikes its letters are not
    # what the reader reads.
    faces = {label, plain, seen} if seen == unicodedata.normalize("NFKC", plain) else {seen}
    if host is not None:
        faces = {f"{scheme}{face.strip()}" for face in faces for scheme in ("https://", "http://")}
    own = href.rstrip("/").casefold()
    normalized = [parser().normalizeLink(face.strip()) for face in faces]
    if any(face.rstrip("/").casefold() == own for face in normalized):
        return False
    if host is not None and not host.group(3):
        site = _site(href)
        return site is None or all(_site(face) != site for face in normalized)
    return True


def _top_name(name: str) -> bool:
    return name not in _FILE_TYPES and (len(name) == 2 or not name.isascii() or name in _TOP_NAMES)


def _site(address: str) -> str | None:
    try:
        name = urlsplit(address).hostname
    except ValueError:  # a port of letters, an unclosed ``[``
        return None
    # The root's dot, ``bank.example.``, or the sentence's mark, ``paypal.com,``; or none.
    return name.rstrip(".,;!").removeprefix("www.") if name else None
