"""A label that is a host alone is read by any top name of the root zone (``paypal.support``,
``login.microsoftonline.security``), and one with a user's name before its host (``bank.example@evil.example``,
which a browser opens as evil.example) is an address too; names of code (``ASP.NET``, ``System.IO``,
``asyncio.run``) and versions (``1.2.3.4``) stay links."""

from __future__ import annotations

import html

import pytest

from platforms.formatting import discord_markdown, slack_mrkdwn, telegram_html
from platforms.formatting.link_labels import _CODE_NAMES, _delegated, other_address

EVIL = "https://evil.example/x"


def _written_out(label: str, href: str) -> None:
    markdown = f"[{label}]({href})"
    assert slack_mrkdwn.render(markdown) == f"{label} (<{href}>)"
    assert discord_markdown.render(markdown) == f"{label} (<{href}>)"
    assert telegram_html.render(markdown) == f'{html.escape(label)} (<a href="{href}">{href}</a>)'


def _a_link(label: str, href: str) -> None:
    markdown = f"[{label}]({href})"
    assert slack_mrkdwn.render(markdown) == f"<{href}|{label}>"
    assert discord_markdown.render(markdown) == f"[{label}]({href})"
    assert telegram_html.render(markdown) == f'<a href="{href}">{html.escape(label)}</a>'


@pytest.mark.parametrize("label", [
    "login.microsoftonline.security",
    "paypal.amazon",  # a brand's top name
    "signin.apple",
    "LOGIN.APPLE",  # capitals throughout read as a host
    "x.accountant",
    "bank.example@evil.example",  # a user's name: a browser opens evil.example
    "support@paypal.com",  # a mail address opening a web page
    "paypal.com@evil.example",
    "ВАNК.example@evil.example",  # look-alike capitals in the user's name
])
def test_a_host_with_an_uncommon_top_name_or_a_users_name_is_another_address(label: str) -> None:
    _written_out(label, EVIL)


@pytest.mark.parametrize("label", ["bank.example@evil.example", "support@evil.example"])
def test_a_host_after_a_users_name_is_written_out_even_for_its_own_site(label: str) -> None:
    # The reader may take either host for the one it opens: only the link's own address is no other.
    _written_out(label, "https://evil.example/login")


@pytest.mark.parametrize(("label", "href"), [
    ("ASP.NET", "https://dotnet.microsoft.com/apps/aspnet"),
    ("ADO.NET", "https://learn.microsoft.com/dotnet/framework/data/adonet/"),
    ("System.IO", "https://learn.microsoft.com/dotnet/api/system.io"),
    ("Socket.IO", "https://socket.io/docs/v4/"),
    ("java.util.Date", "https://docs.oracle.com/javase/8/docs/api/java/util/Date.html"),
    ("Node.js", "https://nodejs.org/en"),
    ("asyncio.run", "https://docs.python.org/3/library/asyncio-runner.html#asyncio.run"),
    ("re.search", "https://docs.python.org/3/library/re.html#re.search"),
    ("Array.prototype.map", "https://developer.mozilla.org/docs/Web/JavaScript/Reference/Array/map"),
    ("plt.show", "https://matplotlib.org/stable/api/_as_gen/matplotlib.pyplot.show.html"),
    ("torch.nn", "https://pytorch.org/docs/stable/nn.html"),  # nn is no country's
    ("id_rsa.pub", "https://github.com/o/r/blob/main/id_rsa.pub"),
    ("clip.mov", "https://github.com/o/r/blob/main/clip.mov"),
    ("x@self.weight", "https://pytorch.org/docs/stable/generated/torch.matmul.html"),
    ("1.2.3.4", "https://github.com/o/r/releases/tag/v1.2.3.4"),  # a version
    ("2.0.0.1", "https://github.com/o/r/releases/tag/2.0.0.1"),
    ("999.10.10.10", "https://example.org/build"),  # no address has a 999
])
def test_a_name_of_code_or_a_version_stays_a_link(label: str, href: str) -> None:
    _a_link(label, href)


@pytest.mark.parametrize("label", ["10.0.0.1", "192.168.0.1", "8.8.8.8", "1.1.1.1", "1.2.3.4/admin", "1.2.3.4:8080"])
def test_an_ipv4_host_still_reads_as_an_address(label: str) -> None:
    _written_out(label, EVIL)


@pytest.mark.parametrize(("label", "href"), [
    ("alice@bank.example", "mailto:alice@bank.example"),
    ("Alice@Bank.example", "mailto:alice@bank.example"),
    ("bank.example@evil.example", "https://bank.example@evil.example"),
])
def test_a_label_with_a_users_name_that_is_the_links_own_address_stays_a_link(label: str, href: str) -> None:
    assert other_address(label, href) is False


def test_each_top_name_taken_for_code_is_one_of_the_root_zones() -> None:
    # A name no longer in the root zone would be no address anyway: its entry would be dead.
    assert all(_delegated(name) for name in _CODE_NAMES)


@pytest.mark.parametrize("label", ["PayPal.Me", "Youtu.Be", "Amazon.De", "Bit.Ly", "Wa.Me", "T.Me"])
def test_a_host_whose_countrys_ending_is_capitalised_is_another_address(label: str) -> None:
    # A brand's own spelling (PayPal.Me); only an ending all in capitals after small letters is code's (System.IO).
    _written_out(label, EVIL)


@pytest.mark.parametrize(("label", "href"), [
    ("git@github.com:org/repo", "https://github.com/org/repo"),
    ("git@github.com:org/repo.git", "https://github.com/org/repo"),
    ("git@gitlab.com:group/project.git", "https://gitlab.com/group/project/-/tree/main"),
])
def test_an_ssh_clone_address_for_its_own_sites_page_stays_a_link(label: str, href: str) -> None:
    _a_link(label, href)


@pytest.mark.parametrize("label", ["git@github.com:org/repo", "git@bank.example:org/repo",
                                   "bank.example@evil.example:org/repo"])
def test_an_ssh_clone_address_for_another_site_is_written_out(label: str) -> None:
    _written_out(label, "https://evil.example/org/repo" if label.startswith("git@github") else EVIL)


@pytest.mark.parametrize(("label", "href"), [
    ("application.properties", "https://docs.spring.io/spring-boot/reference/features/external-config.html"),
    ("f.seek", "https://docs.python.org/3/library/io.html#io.IOBase.seek"),
])
def test_a_file_or_call_whose_ending_is_a_newer_top_name_stays_a_link(label: str, href: str) -> None:
    _a_link(label, href)
