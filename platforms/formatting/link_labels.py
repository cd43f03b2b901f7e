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

import functools
import re
import unicodedata
from urllib.parse import urlsplit

from publicsuffixlist import PublicSuffixList

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
    r"\s*(?P<user>[^\s/?#]+@)?"
    r"(?P<host>(?:[^\W_](?:[^\W_]|-)*\.)+(?P<ending>[^\W\d_]{2,})|(?P<ip>(?:\d{1,3}\.){3}\d{1,3}))"
    r"(?P<rest>[:/?#]\S*)?[.,;!]?\s*\Z")
"""An address written without its scheme: a host of two or more names (or an IPv4 one, ``192.168.0.1``), after a
user's name and ``@`` or not (``bank.example@evil.example``, which a browser opens as evil.example, and a mail address
reads as one), then a port, path, query or fragment (or the root's dot, ``bank.example.``, or the sentence's mark,
``paypal.com,``)."""
_TOP_NAMES = frozenset(
    "com net org edu gov mil int info biz name pro mobi aero asia coop jobs tel travel museum xxx app dev page web "
    "online site website tech store shop blog cloud link live news wiki email mail bank finance money pay support help "
    "login secure account services network systems digital media art club xyz top icu vip one today world global "
    "example test invalid localhost".split())
"""The commonest top names, which a host alone (no scheme, path or ``www.``) is read by however it is written. It is
read by any other top name in the root zone too (`_delegated`: a country's, ``python.org``, ``bit.ly``; a brand's or
a word's, ``login.microsoftonline.security``) and by one not in ASCII (``пример.рф``), but not by `_FILE_TYPES` and
`_CODE_NAMES`, nor by one in capitals after small letters (a longer one capitalised, but not a country's:
``PayPal.Me`` is an address): ``System.IO``, ``Socket.IO``, ``java.util.Date``, ``Locale.US``, names of code on the
page the label links to, are no address. Neither is a Java package (`_PACKAGE_ROOTS`) nor ``.NET``'s name (`_PLATFORM`).
Only a name a reader knows as a site's (`_BRANDS`) tells ``Amazon.DE``, ``paypal.IO`` and ``paypal.run`` from code
written the same way: before any of those endings but a file's (save `_BRAND_SITES`) it reads as that site."""
_FILE_TYPES = frozenset(
    "py md rs sh js ts jsx tsx json yaml yml toml txt html htm css cfg ini conf lock log csv xml sql cpp hpp go rb "
    "java kt swift php ipynb pdf png jpg jpeg gif svg zip gz tgz whl exe dll docx xlsx pptx mov pub cab pid "
    "properties cc so ac am cu tf mm".split())
"""Ends of a name with no scheme, path or ``www.`` that name a file more often than a host: ``[setup.py](…)`` is a
file on the page it links to, ``[bank.com](…)`` a site. Countries' among them (C++'s ``main.cc``, ``lib.so``,
Autotools' ``configure.ac`` and ``Makefile.am``, CUDA's ``kernel.cu``, Terraform's ``main.tf``, Objective-C++'s
``view.mm``) are small ones whose sites a reader rarely meets; ``.in`` and ``.pl`` (India's, Poland's) are not."""
_CODE_NAMES = frozenset(
    "auto bar call case cat center chat click data date day dot events fail final fit foo group host map new next now "
    "open ping place play plus post press prod property read rest run save search seek select shell show storage style "
    "tab target total watch audio video abc author blue bot box build channel circle city compare contact degree delta "
    "directory family fun game green menu mobile omega parts phone photo photos prime red report star stream team "
    "tools zero".split())
"""Top names in the root zone that end a name of code more often than a host: ``asyncio.run``, ``re.search``,
``Array.prototype.map``, ``plt.show``, ``model.fit``, ``cv2.circle``, ``user.phone``, ``collections.abc``. Most end
an attribute in Python's own library and the packages this project installs 20 times or more (``.read`` 3,300,
``.circle`` 6, ``.phone`` and ``.photo`` fields of apps' code); none is a word a sign-in page is named by."""
_BRANDS = frozenset(
    "paypal amazon apple icloud google gmail youtube microsoft outlook hotmail office365 skype linkedin github gitlab "
    "facebook instagram whatsapp twitter tiktok snapchat reddit discord telegram slack netflix spotify "
    "steam steampowered steamcommunity roblox epicgames ebay walmart alibaba aliexpress shopify stripe adobe dropbox "
    "docusign yahoo yandex sberbank tinkoff baidu tencent wechat naver kakao rakuten flipkart paytm "
    "mercadolibre samsung huawei xiaomi dhl fedex ups usps chase wellsfargo bankofamerica citibank hsbc barclays "
    "santander revolut venmo cashapp coinbase binance kraken metamask trezor mastercard amex "
    "americanexpress openai chatgpt".split())
"""Brands phishing most often names (its yearly reports: Microsoft, Google, Apple, Amazon, PayPal, DHL, banks, coin
exchanges), as a host's name, or a hyphen's part of it (``paypal-login``), or, six letters or more, its start
(``microsoftonline``): not words that name code too (``meta.data``, ``target.show``, ``ledger.save``)."""
_BRAND_STARTS = tuple(sorted(brand for brand in _BRANDS if len(brand) >= 6))
_BRAND_SITES = frozenset("cc so ac am cu tf mm zip mov".split())
"""Files' endings read as a site's after a brand's name (``paypal.cc``, ``google.zip``): countries' and Google's
``.zip`` and ``.mov``, root-zone names phishing uses; not ``.py`` or ``.md`` (``discord.py``, ``stripe.py``)."""
_GENERIC = frozenset("com org net edu gov".split())
_PACKAGE_ROOTS = _GENERIC | {"io"}
"""First names of a Java or Android package (``com.google.android``, ``org.apache.commons.io``): with a third name
after one, the whole is a package, unless it ends as a site's host does, as ``edu.google.com``, or at a brand's
site in a country, as ``com.paypal.de``; no package does."""
_CLONE_PATH = re.compile(r":(?!\d)[^/]")
"""What follows the host of a clone address, ``git@github.com:org/repo``: a path after the colon, not a port."""
_PLATFORM = re.compile(r"[A-Z]{2,3}\.NET")
"""``ASP.NET``, ``ADO.NET``, ``VB.NET``, ``ML.NET``: .NET's names, in capitals (``Json.NET``, ``Akka.NET`` too)."""


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
    if not web and (host is None or not _written_address(host)):
        return False
    plain = as_read(label)
    # Only a label that looks like nothing else may be read as written too: with look-alikes its letters are not
    # what the reader reads.
    faces = {label, plain, seen} if seen == unicodedata.normalize("NFKC", plain) else {seen}
    if host is not None:
        schemes = ("https://", "http://", "mailto:") if host["user"] else ("https://", "http://")
        faces = {f"{scheme}{face.strip()}" for face in faces for scheme in schemes}
    own = href.rstrip("/").casefold()
    normalized = [parser().normalizeLink(face.strip()) for face in faces]
    if any(face.rstrip("/").casefold() == own for face in normalized):
        return False
    # A host alone names its site; one after a user's name (``bank.example@evil.example``) reads as either host, but
    # for a clone address's (``git@github.com:org/repo``: a name that is no host, a colon and a path).
    clone = host is not None and host["user"] and "." not in host["user"] and _CLONE_PATH.match(host["rest"] or "")
    if host is not None and (clone or not host["rest"] and not host["user"]):
        site = _site(href)
        return site is None or all(_site(face) != site for face in normalized)
    return True


def _written_address(host: re.Match[str]) -> bool:
    """Whether a label `_HOST` matched reads as an address: one with a port or path or ``www.`` always, a host
    alone (a user's name before it or not: ``x@self.weight`` is code) by its top name (`_top_name`); an IPv4 one
    unless a number is no address's (``999.1.1.1``) or, alone, it reads as a version (``1.2.3.4``: four digits, not
    all the same as in ``8.8.8.8`` and ``1.1.1.1``)."""
    if host["ip"]:
        numbers = [int(number) for number in host["ip"].split(".")]
        return max(numbers) <= 255 and bool(host["rest"] or max(numbers) > 9 or len(set(numbers)) == 1)
    if host["rest"] or host["host"].casefold().startswith("www."):
        return True
    return _top_name(host["ending"], host["host"])


def _top_name(ending: str, host: str) -> bool:
    name = ending.casefold()
    names = host.casefold().split(".")[:-1]
    if name in _FILE_TYPES and not (name in _BRAND_SITES and _brand(names)):
        return False
    if len(names) > 1 and names[0] in _PACKAGE_ROOTS and name not in _GENERIC and not (
            len(name) == 2 and _brand_site(host)):
        return False
    # Where code and hosts are written alike (Amazon.DE and Locale.DE, paypal.run and asyncio.run) only the name tells
    # them apart, and only a brand's misleads: its site is what the reader trusts. Microsoft.Azure is a namespace.
    if _brand(names) and (ending.islower() or ending.isupper() or len(name) == 2) and _delegated(name):
        return True
    if ending == "NET" and (_PLATFORM.fullmatch(host) or host[0].isupper() and not host.isupper()):
        return False
    if name in _TOP_NAMES or not name.isascii():
        return True
    # System.IO, java.util.Date: capitals in a host are all capitals; a country's may be capitalised (PayPal.Me).
    if ending != name and not host.isupper() and (len(name) > 2 or ending.isupper()):
        return False
    return name not in _CODE_NAMES and _delegated(name)


def _brand(names: list[str]) -> bool:
    parts = [part for name in names for part in name.split("-")]
    return any(part in _BRANDS or part.startswith(_BRAND_STARTS) for part in parts)


def _brand_site(host: str) -> bool:
    # The site a host is under (paypal.de for com.paypal.de, amazon.co.uk for com.amazon.co.uk) is a brand's.
    site = _top_names().privatesuffix(host.casefold())
    return site is not None and _brand(site.split(".")[:1])


@functools.cache
def _top_names() -> PublicSuffixList:
    # Read at the first host alone (70 ms), not at import: most commands render no link.
    return PublicSuffixList(only_icann=True, accept_unknown=False)


def _delegated(name: str) -> bool:
    """Whether ``name`` is a top-level domain, by the root zone's list as publicsuffixlist bundles it (no fetch)."""
    return _top_names().is_public(name)


def _site(address: str) -> str | None:
    try:
        name = urlsplit(address).hostname
    except ValueError:  # a port of letters, an unclosed ``[``
        return None
    # The root's dot, ``bank.example.``, or the sentence's mark, ``paypal.com,``; or none.
    return name.rstrip(".,;!").removeprefix("www.") if name else None
