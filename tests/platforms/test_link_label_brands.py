"""Code and hosts written alike: ``Amazon.DE`` like ``Locale.DE``, ``paypal.run`` like ``asyncio.run``, ``paypal.IO``
like ``System.IO``. A brand's name before the ending reads as its site, and the label is written out; names of code
(``cv2.circle``, ``user.phone``, ``com.google.android``) and files (``main.cc``, ``lib.so``) stay links. Measured on a
corpus of both: the cases left over are the rule's known limits, marked so a change that fixes one is noticed."""

from __future__ import annotations

import html

import pytest

from platforms.formatting import discord_markdown, slack_mrkdwn, telegram_html
from platforms.formatting.link_labels import other_address

EVIL = "https://evil.example/x"


def _written_out(label: str) -> None:
    markdown = f"[{label}]({EVIL})"
    assert slack_mrkdwn.render(markdown) == f"{label} (<{EVIL}>)"
    assert discord_markdown.render(markdown) == f"{label} (<{EVIL}>)"
    assert telegram_html.render(markdown) == f'{html.escape(label)} (<a href="{EVIL}">{EVIL}</a>)'


def _a_link(label: str) -> None:
    markdown = f"[{label}]({EVIL})"
    assert slack_mrkdwn.render(markdown) == f"<{EVIL}|{label}>"
    assert discord_markdown.render(markdown) == f"[{label}]({EVIL})"
    assert telegram_html.render(markdown) == f'<a href="{EVIL}">{html.escape(label)}</a>'


@pytest.mark.parametrize("label", [
    "Amazon.DE", "Microsoft.DE", "eBay.DE", "GitHub.IO",  # a country's ending in capitals after a brand
    "paypal.IO", "PayPal.IO",
    "paypal.run", "PayPal.run", "paypal-login.run", "paypalsecure.run", "netflix.watch", "amazon.fit",  # code's endings
    "PAYPAL.NET", "Amazon.NET",
    "pаypal.run",  # a Cyrillic а
])
def test_a_brands_name_before_an_ending_code_shares_is_another_address(label: str) -> None:
    _written_out(label)


@pytest.mark.parametrize("label", [
    "cv2.circle", "user.phone", "collections.abc", "self.channel", "ctx.bot",  # newer root-zone endings
    "com.google.android", "org.apache.commons.io", "com.example.app", "org.junit.Test",  # Java and Android packages
    "main.cc", "lib.so", "configure.ac", "Makefile.am", "kernel.cu", "main.tf",  # files, their endings countries'
    "Json.NET", "Akka.NET",  # .NET's
    "System.IO", "Locale.US", "pd.NA", "Microsoft.Azure", "discord.py", "meta.data",  # still code, brand or not
])
def test_a_name_of_code_or_a_file_stays_a_link(label: str) -> None:
    _a_link(label)


@pytest.mark.parametrize("label", ["edu.google.com", "com.paypal.com"])
def test_a_host_starting_as_a_package_but_ending_as_a_site_is_another_address(label: str) -> None:
    _written_out(label)


CODE = [
    "os.path.join", "re.search", "asyncio.run", "subprocess.run", "np.array", "plt.show", "fig.show", "model.fit",
    "cv2.circle", "turtle.circle", "ax.bar", "self.data", "request.data", "args.host", "event.target", "self.style",
    "user.phone", "contact.phone", "collections.abc", "math.degree", "datetime.date", "datetime.datetime.now",
    "torch.nn", "pd.NA", "x@self.weight", "self.channel", "ctx.bot", "app.run",
    "java.util.Date", "java.util.List", "org.apache.commons.io", "com.google.android", "com.example.app",
    "com.android.support", "android.app.Activity",
    "Locale.US", "Locale.UK", "Color.RED", "org.junit.Test", "io.reactivex.rxjava3", "de.greenrobot.event",
    "System.IO", "Socket.IO", "System.Data", "ASP.NET", "ADO.NET", "VB.NET", "ML.NET", "Json.NET", "Akka.NET",
    "Microsoft.Azure",
    "main.cc", "lib.so", "libc.so", "main.cpp", "setup.py", "README.md", "build.sh", "App.vue", "Cargo.toml",
    "configure.ac", "Makefile.am", "kernel.cu", "main.tf",
    "view.mm", "application.properties", "id_rsa.pub",
    "clip.mov", "f.seek",
]
ADDRESSES = [
    "paypal.com", "PayPal.com", "PAYPAL.COM", "Paypal.Com", "PAYPAL.NET", "paypal.net", "PayPal.Me", "paypal.me",
    "paypal.io", "paypal.IO", "PayPal.IO", "paypal.run", "PayPal.run", "paypal-login.run", "paypal.shop",
    "paypal.show", "Amazon.DE", "AMAZON.DE", "Amazon.De", "amazon.de", "amazon.co.uk", "Amazon.co.UK", "amazon.in",
    "amazon.fit", "amazon.support", "Bit.Ly", "bit.ly", "youtu.be", "t.me", "wa.me", "apple.com", "Apple.COM",
    "icloud.com", "appleid.apple.com", "signin.apple", "paypal.amazon", "login.microsoftonline.security",
    "Microsoft.DE", "outlook.live", "Google.FR", "google.co.jp", "accounts.google.com", "Netflix.NL",
    "netflix.watch", "eBay.DE", "ebay.de", "Facebook.RU", "whatsapp.net", "DHL.DE", "dhl.de", "Chase.COM",
    "wellsfargo.com", "Binance.US", "MetaMask.IO", "GitHub.IO", "Discord.GG", "discord.gg", "Yandex.RU",
    "SBERBANK.RU", "vk.com", "zoom.us", "Steam.run", "coinbase.com", "socket.io",
    ]


@pytest.mark.parametrize("label", CODE)
def test_a_corpus_of_code_and_file_names_stays_links(label: str) -> None:
    assert not other_address(label, EVIL)


@pytest.mark.parametrize("label", ADDRESSES)
def test_a_corpus_of_address_like_labels_is_written_out(label: str) -> None:
    assert other_address(label, EVIL)


@pytest.mark.parametrize("label", [
    "paypal.cc", "Amazon.SO", "google.am", "apple.ac", "paypal.tf", "paypal.cu", "apple.mm",  # countries' endings
    "google.zip", "microsoft-office.zip", "amazon.mov",  # Google's root-zone names that are files' too
])
def test_a_brands_name_before_a_file_ending_in_the_root_zone_is_another_address(label: str) -> None:
    # Before b4cffe01 .cc, .so, .ac, .am, .cu, .tf and .mm were read as countries': paypal.cc was written out.
    _written_out(label)


@pytest.mark.parametrize("label", ["discord.py", "stripe.py", "github.md", "libgoogle.so", "main.cc", "slack.pub"])
def test_a_brands_file_with_an_older_files_ending_stays_a_link(label: str) -> None:
    _a_link(label)


@pytest.mark.parametrize("label", ["com.paypal.de", "io.paypal.me", "com.amazon.co.uk", "io.github.io"])
def test_a_host_starting_as_a_package_but_ending_at_a_brands_site_is_another_address(label: str) -> None:
    # The site is paypal.de, paypal.me, amazon.co.uk, github.io; before b4cffe01 these were written out.
    _written_out(label)


@pytest.mark.parametrize("label", ["com.google.common.io", "com.microsoft.azure", "com.amazon.aws", "com.google.ads"])
def test_a_package_under_a_brand_not_ending_at_its_site_stays_a_link(label: str) -> None:
    _a_link(label)


# The rule's known limits, as it stands (docs/platforms/slack.md): names of code ending in a common top name
# (`.info`, `.email`, `.net`, `.web`, `.app`) or a country's sites outweigh (India's, Poland's) are written out; a
# brand not on the list, written as code writes ``Locale.DE``, stays a link.
WRITTEN_OUT_THOUGH_CODE = ["logging.INFO", "user.email", "androidx.core.app", "System.Net", "System.Web", "Makefile.in",
                           "script.pl"]
LEFT_A_LINK_THOUGH_AN_ADDRESS = ["Zalando.DE", "Allegro.PL"]


@pytest.mark.parametrize("label", WRITTEN_OUT_THOUGH_CODE)
def test_known_limit_code_written_out(label: str) -> None:
    assert other_address(label, EVIL)


@pytest.mark.parametrize("label", LEFT_A_LINK_THOUGH_AN_ADDRESS)
def test_known_limit_an_unlisted_brand_stays_a_link(label: str) -> None:
    assert not other_address(label, EVIL)
