"""One builder per family of mail programs: each writes a reply to the mail answered the way that
program does (its MIME structure, where it puts the player's words, how it quotes, its attribution or
header block in the player's language, its footer or signature), from a :class:`Reply`.

The player's words are plain lines.  For an inline reply they hold marker lines ``[[…]]``: ``[[Legal
moves]]`` quotes the mail answered from where the last quote stopped through its first line holding
"Legal moves", and ``[[]]`` quotes the rest of it.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from email.utils import format_datetime
from html import escape

from tests.mailshapes.langs import LANGS, Lang
from tests.mailshapes.mime import Multipart, Part, encoded_word, message
from tests.mailshapes.original import Original


@dataclass
class Reply:
    """What a builder needs: the mail answered, the player, their words and how to send them."""

    original: Original
    lang: Lang
    words: str
    posting: str  # top, bottom or inline
    sender: str
    name: str
    charset: str  # The charset of the text parts.
    cte: str  # Their transfer encoding.
    threaded: bool = True  # In-Reply-To and References name the mail answered.
    attach: str = ""  # "vcard" or "image": a part the program adds.

    @property
    def o(self) -> Original:
        """The mail answered."""
        return self.original

    def when(self, template: str, **more: str) -> str:
        """A date template of the language filled in for the mail answered."""
        return self.lang.date(template, self.o.date, self.o.sender_name, self.o.sender_addr, **more)

    def extra(self, key: str, **more: str) -> str:
        """A program's own string in the language (English when the language has none), its date
        filled in in the language it is written in."""
        lang = self.lang if key in self.lang.extra else LANGS["en"]
        return lang.date(lang.extra[key], self.o.date, self.o.sender_name, self.o.sender_addr, **more)

    def uid(self) -> str:
        """Hex digits unique to this reply (for Message-IDs and boundaries)."""
        return hashlib.sha1(f"{self.o.message_id}{self.words}{self.sender}".encode()).hexdigest()


Builder = Callable[[Reply], bytes]


@dataclass(frozen=True)
class Client:
    """A mail program: its name, the shape of what it sends, and its builder."""

    name: str
    shape: str  # plain, html or multipart
    build: Builder


CLIENTS: dict[str, Client] = {}


def client(key: str, name: str, shape: str) -> Callable[[Builder], Builder]:
    """Register a builder under ``key``."""

    def register(build: Builder) -> Builder:
        CLIENTS[key] = Client(name, shape, build)
        return build

    return register


# Pieces every builder uses ---------------------------------------------------------------------------


def headers(r: Reply, prefix: str = "Re:", domain: str = "example.org", mailer: tuple[str, str] | None = None,
            to: str | None = None, subject_charset: str = "utf-8") -> list[tuple[str, str]]:
    """The reply's headers: From the player, To the mail's Reply-To, its subject under ``prefix``, and
    (when threaded) In-Reply-To and References naming it."""
    uid = r.uid()
    subject = f"{prefix} {r.o.subject}" if prefix else r.o.subject
    out = [
        ("From", f"{encoded_word(r.name, subject_charset)} <{r.sender}>"),
        ("To", to.format(addr=r.o.reply_to) if to else r.o.reply_to),
        ("Subject", encoded_word(subject, subject_charset)),
        ("Date", format_datetime(r.o.date + timedelta(minutes=7))),
        ("Message-ID", f"<{uid[:24]}@{domain}>"),
    ]
    if r.threaded:
        out += [("In-Reply-To", r.o.message_id), ("References", r.o.references)]
    if mailer:
        out.append(mailer)
    return out


def with_attachment(r: Reply, body: Part | Multipart) -> Part | Multipart:
    """``body`` with the part the program adds, if the case asks for one (in multipart/mixed)."""
    if not r.attach:
        return body
    if r.attach == "vcard":
        card = f"BEGIN:VCARD\nVERSION:3.0\nFN:{r.name}\nEMAIL:{r.sender}\nTEL:+1 555 0100\nEND:VCARD\n"
        extra = Part("x-vcard", card, charset="utf-8", encoding="base64", params=f'; name="{r.name}.vcf"',
                     headers=[("Content-Disposition", f'attachment; filename="{r.name}.vcf"')])
    else:
        png = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000"
                            "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082")
        extra = Part("png", maintype="image", data=png, encoding="base64", params='; name="board.png"',
                     headers=[("Content-Disposition", 'inline; filename="board.png"'),
                              ("Content-ID", f"<{r.uid()[:12]}@example.org>")])
    return Multipart("mixed", [body, extra], f"mixed_{r.uid()[:20]}")


def text_part(r: Reply, text: str, params: str = "") -> Part:
    """The plain part in the case's charset and transfer encoding."""
    return Part("plain", text, r.charset, r.cte, params)


def html_part(r: Reply, html: str) -> Part:
    """The HTML part in the case's charset and transfer encoding."""
    return Part("html", html, r.charset, r.cte)


def alternative(r: Reply, text: str, html: str, boundary: str = "") -> Multipart:
    """multipart/alternative of the plain and the HTML part."""
    return Multipart("alternative", [text_part(r, text), html_part(r, html)], boundary or f"alt_{r.uid()[:28]}")


_MARKER = re.compile(r"^\[\[(.*)\]\]$")


def compose(r: Reply, attribution: str, quote: Callable[[list[str]], str], lines: list[str] | None = None,
            footer: str = "", gap: str = "\n\n") -> str:
    """The plain text of a reply: the words above (top), under (bottom) or between (inline) the quoted
    mail, ``footer`` under the words, ``attribution`` over the quote, ``gap`` between words and quote."""
    lines = r.o.lines() if lines is None else lines
    head = f"{attribution}\n" if attribution else ""
    words = r.words + (f"\n\n{footer}" if footer else "")
    if r.posting == "top":
        return f"{words}{gap}{head}{quote(lines)}\n"
    if r.posting == "bottom":
        return f"{head}{quote(lines)}{gap}{words}\n"
    out, rest = [head.rstrip("\n")] if head else [], lines
    for line in r.words.split("\n"):
        marker = _MARKER.match(line)
        if marker is None:
            out.append(line)
            continue
        if marker.group(1):
            chunk, rest = r.o.split_at(marker.group(1), rest)
        else:
            chunk, rest = rest, []
        out.append(quote(chunk))
    return "\n".join(out) + (f"\n\n{footer}" if footer else "") + "\n"


def html_lines(r: Reply, line: str = "<div>{}</div>", blank: str = "<div><br></div>", joiner: str = "") -> str:
    """The words as a program's HTML: each line in ``line``, an empty one as ``blank``; ``*b3*`` is bold."""
    out = []
    for text in r.words.split("\n"):
        if not text.strip():
            out.append(blank)
            continue
        html = escape(text)
        html = re.sub(r"\*([^*\s][^*]*)\*", r"<b>\1</b>", html)
        out.append(line.format(html))
    return joiner.join(out)


def gt(o: Original, blank: str = ">") -> Callable[[list[str]], str]:
    """Quote lines with "> " (an empty line as ``blank``)."""
    return lambda lines: o.quoted("> ", blank, lines)


def unquoted(lines: list[str]) -> str:
    """The lines as they are (Outlook's and the webmails' unquoted original)."""
    return "\n".join(lines)


def header_block(labels: tuple[str, ...] | list[str], values: list[str], sep: str = ": ") -> str:
    """An unquoted header block, "From: …" line by line."""
    return "\n".join(f"{label}{sep}{value}" for label, value in zip(labels, values, strict=True))


def outlook_values(r: Reply, sender: str | None = None) -> list[str]:
    """From, Sent, To and Subject of the mail answered, as Outlook writes them."""
    return [sender or f"{r.o.sender_name} <{r.o.sender_addr}>", r.when(r.lang.outlook_date), r.o.to_addr,
            r.o.subject]


def html_header_block(labels: tuple[str, ...] | list[str], values: list[str], joiner: str = "<br>") -> str:
    """A header block as Outlook's HTML writes it: bold labels, one line each."""
    return joiner.join(f"<b>{escape(label)}:</b> {escape(value)}" for label, value in zip(labels, values,
                                                                                          strict=True))


# Gmail -------------------------------------------------------------------------------------------------

_GMAIL_QUOTE_STYLE = "margin:0px 0px 0px 0.8ex;border-left:1px solid rgb(204,204,204);padding-left:1ex"


def _gmail_attribution(r: Reply) -> str:
    # Gmail wraps a long attribution in the plain part at 76 characters, wherever a space falls.
    text = r.when(r.lang.gmail)
    out, line = [], ""
    for word in text.split(" "):
        if line and len(line) + 1 + len(word) > 76:
            out.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    return "\n".join([*out, line])


def _gmail_html(r: Reply) -> str:
    attribution = escape(r.when(r.lang.gmail))
    quote = (f'<div class="gmail_quote gmail_quote_container"><div dir="ltr" class="gmail_attr">{attribution}'
             f'<br></div><blockquote class="gmail_quote" style="{_GMAIL_QUOTE_STYLE}">{r.o.html_body}'
             "</blockquote></div>")
    words = f'<div dir="ltr">{html_lines(r)}</div>'
    return f"{words}<br>{quote}" if r.posting == "top" else f"{quote}<br>{words}"


@client("gmail", "Gmail (web)", "multipart")
def gmail(r: Reply) -> bytes:
    """Gmail on the web: text and HTML, the attribution wrapped at 76, the quote marked ">"."""
    text = compose(r, _gmail_attribution(r) + "\n", gt(r.o))
    head = headers(r, domain="mail.gmail.com")
    return message(head, with_attachment(r, alternative(r, text, _gmail_html(r), f"0000000000{r.uid()[:18]}")))


@client("gmail-html", "Gmail (HTML only, as some relays pass it)", "html")
def gmail_html(r: Reply) -> bytes:
    """Gmail's HTML part alone (gmail_quote)."""
    return message(headers(r, domain="mail.gmail.com"), html_part(r, _gmail_html(r)))


@client("gmail-android", "Gmail for Android", "multipart")
def gmail_android(r: Reply) -> bytes:
    """The Gmail app: paragraphs as <p dir="ltr">, the attribution right under the words."""
    attribution = r.when(r.lang.gmail)
    text = compose(r, attribution + "\n", gt(r.o), gap="\n")
    html = (html_lines(r, '<p dir="ltr">{}</p>\n', "") +
            f'<div class="gmail_quote">{escape(attribution)}<br type="attribution"><blockquote class="gmail_quote"'
            f' style="margin:0 0 0 .8ex;border-left:1px #ccc solid;padding-left:1ex">{r.o.html_body}</blockquote>'
            "</div>")
    return message(headers(r, domain="mail.gmail.com"), alternative(r, text, html))


# Outlook -----------------------------------------------------------------------------------------------

_WORD_HEAD = ('<html xmlns:o="urn:schemas-microsoft-com:office:office" xmlns="http://www.w3.org/TR/REC-html40">'
              '<head><meta http-equiv=Content-Type content="text/html; charset={charset}"><meta name=Generator '
              'content="Microsoft Word 15 (filtered medium)"><style><!--\np.MsoNormal, li.MsoNormal, '
              'div.MsoNormal\n\t{{margin:0cm;\n\tfont-size:11.0pt;\n\tfont-family:"Calibri",sans-serif;}}\n'
              "--></style></head><body lang=EN-US link=\"#0563C1\" vlink=\"#954F72\" style='word-wrap:break-word'>"
              "<div class=WordSection1>")


def _word_words(r: Reply) -> str:
    return html_lines(r, "<p class=MsoNormal>{}<o:p></o:p></p>", "<p class=MsoNormal><o:p>&nbsp;</o:p></p>")


@client("outlook", "Outlook for Windows", "multipart")
def outlook(r: Reply) -> bytes:
    """Outlook on the desktop: the words, then an unquoted header block in the user's language and the
    mail answered as it was, unquoted; the HTML's header block in a border-top div."""
    labels = r.lang.outlook
    values = outlook_values(r)
    text = f"{r.words}\n\n \n\n{header_block(labels, values)}\n\n \n\n{r.o.text}\n\n"
    text = text.replace(f"{labels[0]}: {values[0]}\n", f"{labels[0]}: {values[0]} \n", 1)
    html = (_WORD_HEAD.format(charset=r.charset) + _word_words(r) + "<p class=MsoNormal><o:p>&nbsp;</o:p></p>"
            "<div style='border:none;border-top:solid #E1E1E1 1.0pt;padding:3.0pt 0cm 0cm 0cm'>"
            f"<p class=MsoNormal>{html_header_block(labels, values)}<o:p></o:p></p></div>"
            f"<p class=MsoNormal><o:p>&nbsp;</o:p></p>{r.o.html_body}</div></body></html>")
    body = alternative(r, text, html, f"----=_NextPart_000_000C_{r.uid()[:17].upper()}")
    body.preamble = "This is a multipart message in MIME format."
    return message(headers(r, r.lang.reply_prefix, mailer=("X-Mailer", "Microsoft Outlook 16.0")),
                   with_attachment(r, body))


def _source_wrapped(html: str, width: int = 24) -> str:
    """``html`` broken onto a new source line at the first space after ``width`` characters, as Word's
    HTML wraps long source lines (a browser shows one line; a reader that keeps source breaks, two)."""
    cut = html.find(" ", width)
    return html if cut < 0 else html[:cut] + "\n" + html[cut + 1:]


@client("outlook-2010-html", "Outlook 2010 (HTML only)", "html")
def outlook_2010_html(r: Reply) -> bytes:
    """Outlook 2010 sending HTML alone: "From: pbem [mailto:…]" and source line breaks inside the
    header paragraph."""
    labels = r.lang.outlook
    style = 'style="font-size:10.0pt;font-family:&quot;Tahoma&quot;,&quot;sans-serif&quot;"'
    words = html_lines(r, '<p class="MsoNormal"><span style="font-size:11.0pt;color:#1F497D">{}<o:p></o:p>'
                          "</span></p>\n", '<p class="MsoNormal"><span style="font-size:11.0pt"><o:p>&nbsp;</o:p>'
                          "</span></p>\n")
    html = (f'<html>\n<head>\n<meta http-equiv="Content-Type" content="text/html; charset={r.charset}">\n'
            '<meta name="Generator" content="Microsoft Word 14 (filtered medium)">\n</head>\n'
            '<body lang="EN-US" link="blue" vlink="purple">\n<div class="WordSection1">\n' + words +
            f'<p class="MsoNormal"><b><span {style}>{escape(labels[0])}:</span></b><span {style}> '
            f"{escape(r.o.sender_name)} [mailto:{r.o.sender_addr}]\n<br>\n"
            f"<b>{escape(labels[1])}:</b> {escape(r.when(r.lang.outlook_date))}<br>\n"
            f"<b>{escape(labels[2])}:</b> {escape(r.o.to_addr)}<br>\n"
            f"<b>{escape(labels[3])}:</b> {_source_wrapped(escape(r.o.subject))}<o:p></o:p></span></p>\n"
            f'<p class="MsoNormal"><o:p>&nbsp;</o:p></p>\n{r.o.html_body}\n</div>\n</body>\n</html>\n')
    return message(headers(r, r.lang.reply_prefix, subject_charset=r.charset), html_part(r, html))


@client("outlook-plain", "Outlook for Windows (plain text)", "plain")
def outlook_plain(r: Reply) -> bytes:
    """Outlook composing plain text: "-----Original Message-----" and the header block; on top of an
    unquoted original, or (bottom-posted) all of it quoted with "> "."""
    labels = r.lang.outlook
    values = [f"{r.o.sender_name} <{r.o.sender_addr}> ", r.when(r.lang.outlook_date), r.o.to_addr, r.o.subject]
    block = f"{r.lang.original_message}\n{header_block(labels, values)}\n"
    if r.posting == "top":
        text = f"{r.words}\n\n{block}\n{r.o.text}\n\n"
    else:
        quoted_block = "\n".join("> " + line for line in block.split("\n"))
        text = f"\n\n\n{quoted_block}\n{r.o.quoted('> ', '> ')}\n\n{r.words}\n\n\n\n"
    return message(headers(r, r.lang.reply_prefix, mailer=("X-Mailer", "Microsoft Outlook 16.0")),
                   with_attachment(r, text_part(r, text)))


def _owa(r: Reply, footer: str = "", footer_html: str = "", sent: str = "", html_only: bool = False) -> bytes:
    labels = r.lang.outlook
    values = outlook_values(r)
    values[2] = f"{r.o.to_addr} <{r.o.to_addr}>"
    if sent:
        values[1] = sent
    words = r.words + (f"\n\n{footer}" if footer else "")
    text = f"{words}\n________________________________\n{header_block(labels, values)}\n\n{r.o.text}\n"
    block_html = html_header_block(labels, values, "<br>\n")
    div = '<div style="font-family: Aptos, Calibri, Helvetica, sans-serif; font-size: 12pt; color: rgb(0, 0, 0);">'
    html = (f'<html>\n<head>\n<meta http-equiv="Content-Type" content="text/html; charset={r.charset}">\n'
            '<style type="text/css" style="display:none;"> P {margin-top:0;margin-bottom:0;} </style>\n'
            '</head>\n<body dir="ltr">\n' + html_lines(r, div + "\n{}</div>\n", div + "\n<br>\n</div>\n") +
            footer_html + '<div id="appendonsend"></div>\n<hr style="display:inline-block;width:98%" tabindex="-1">\n'
            '<div id="divRplyFwdMsg" dir="ltr"><font face="Calibri, sans-serif" style="font-size:11pt" '
            f'color="#000000">{block_html}</font>\n<div>&nbsp;</div>\n</div>\n'
            f"<div>{r.o.html_body}</div>\n</body>\n</html>\n")
    head = headers(r, r.lang.reply_prefix, domain="namprd11.prod.outlook.com", to='"{addr}" <{addr}>')
    if html_only:
        return message(head, html_part(r, html))
    return message(head, with_attachment(r, alternative(r, text, html, f"_000_DM6PR11MB{r.uid()[:30]}namp_")))


@client("outlook-web", "Outlook on the web / Outlook.com", "multipart")
def outlook_web(r: Reply) -> bytes:
    """Outlook on the web: a line of underscores, then the header block (divRplyFwdMsg in the HTML)."""
    return _owa(r)


@client("outlook-web-html", "Outlook on the web (HTML only, as Exchange relays it)", "html")
def outlook_web_html(r: Reply) -> bytes:
    """Outlook on the web's HTML alone: appendonsend, the <hr> and divRplyFwdMsg, each header on a
    source line of its own."""
    return _owa(r, html_only=True)


@client("outlook-ios", "Outlook for iOS", "multipart")
def outlook_ios(r: Reply) -> bytes:
    """Outlook for iOS: the mobile signature under the words, then Outlook on the web's block."""
    footer = r.extra("outlook_ios")
    html = (f'<div id="ms-outlook-mobile-signature"><div><br></div>{escape(footer)}</div>\n')
    return _owa(r, f"{footer}<https://aka.ms/o0ukef>", html)


@client("outlook-android", "Outlook for Android", "multipart")
def outlook_android(r: Reply) -> bytes:
    """Outlook for Android: its footer, then the block (base64 parts, as it sends them)."""
    footer = r.extra("outlook_android")
    html = f'<div dir="auto"><br></div><div dir="auto">{escape(footer)}</div>\n'
    return _owa(r, f"{footer}<https://aka.ms/AAb9ysg>", html)


@client("outlook-android-bare", "Outlook for Android (original under the footer, no header block)", "plain")
def outlook_android_bare(r: Reply) -> bytes:
    """Outlook for Android as it sometimes sends plain text: the mail answered right under the footer,
    with no attribution, separator or header block at all."""
    text = f"{r.words}\n\n{r.extra('outlook_android')}<https://aka.ms/AAb9ysg>\n\n{r.o.text}\n"
    return message(headers(r, r.lang.reply_prefix, domain="eurprd07.prod.outlook.com"), text_part(r, text))


# Apple -------------------------------------------------------------------------------------------------


@client("apple-mail", "Apple Mail (macOS)", "plain")
def apple_mail(r: Reply) -> bytes:
    """Apple Mail sending plain text: the attribution, the quote marked "> " (blank lines too)."""
    text = compose(r, r.when(r.lang.apple) + "\n", gt(r.o, "> "))
    return message(headers(r, mailer=("X-Mailer", "Apple Mail (2.3774.600.62)")), with_attachment(r, text_part(r, text)))


@client("apple-mail-html", "Apple Mail (macOS, rich text)", "multipart")
def apple_mail_html(r: Reply) -> bytes:
    """Apple Mail with rich text: the attribution inside the quote, <blockquote type="cite">."""
    attribution = r.when(r.lang.apple)
    text = compose(r, f"> {attribution}\n> ", gt(r.o, "> "))
    quote = (f'<div><br><blockquote type="cite"><div>{escape(attribution)}</div><br '
             f'class="Apple-interchange-newline"><div><div>{r.o.html_body}</div></div></blockquote></div>')
    words = html_lines(r)
    html = (f'<html><head><meta http-equiv="content-type" content="text/html; charset={r.charset}"></head><body '
            f'style="overflow-wrap: break-word;">{words if r.posting == "top" else ""}{quote}'
            f'{words if r.posting != "top" else ""}</body></html>')
    return message(headers(r, mailer=("X-Mailer", "Apple Mail (2.3774.600.62)")),
                   with_attachment(r, Multipart("alternative", [text_part(r, text), html_part(r, html)],
                                                f"Apple-Mail={r.uid()[:24]}")))


@client("ios-mail", "iOS Mail (iPhone)", "multipart")
def ios_mail(r: Reply) -> bytes:
    """iPhone Mail: the footer under the words, the attribution quoted with the mail, "> " lines."""
    attribution = r.when(r.lang.apple)
    text = compose(r, f"> {attribution}\n> ", gt(r.o, "> "), footer=r.lang.iphone)
    html = (f'<html><head><meta http-equiv="content-type" content="text/html; charset={r.charset}"></head>'
            f'<body dir="auto">{html_lines(r, "<div dir=ltr>{}</div>", "<div dir=ltr><br></div>")}'
            f'<div dir="ltr"><br></div><div dir="ltr">{escape(r.lang.iphone)}</div><div dir="ltr"><br>'
            f'<blockquote type="cite">{escape(attribution)}<br><br></blockquote></div><blockquote type="cite">'
            f'<div dir="ltr">{r.o.html_body}</div></blockquote></body></html>')
    body = Multipart("alternative", [text_part(r, text), html_part(r, html)], f"Apple-Mail-{r.uid()[:32].upper()}")
    return message(headers(r, mailer=("X-Mailer", "iPhone Mail (22B83)")), with_attachment(r, body))


@client("ios-mail-wrapped", "iOS Mail (older, plain, attribution over three lines)", "plain")
def ios_mail_wrapped(r: Reply) -> bytes:
    """Older iPhone Mail: plain text, the attribution broken over three lines before the address and
    before "wrote:" (or its word in the language)."""
    attribution = r.when(r.lang.apple)
    name_at = attribution.index(f"{r.o.sender_name} <")
    addr_end = attribution.index(">", name_at) + 1
    wrapped = (attribution[: name_at + len(r.o.sender_name)] + "\n" + attribution[name_at + len(r.o.sender_name) + 1:
               addr_end] + "\n" + attribution[addr_end:].lstrip())
    text = compose(r, wrapped + "\n", gt(r.o), footer=r.lang.iphone)
    return message(headers(r, mailer=("X-Mailer", "iPhone Mail (9B176)")), text_part(r, text))


# Thunderbird and other desktop programs ----------------------------------------------------------------


def _flowed_or_gt(r: Reply, lines: list[str]) -> str:
    """The whole mail quoted flowed; a piece of it (inline replies) quoted "> " as it stands."""
    return r.o.flowed() if lines == r.o.lines() else r.o.quoted("> ", ">", lines)


@client("thunderbird", "Thunderbird (plain text, format=flowed)", "plain")
def thunderbird(r: Reply) -> bytes:
    """Thunderbird in plain text: the cite prefix, the quote flowed at 72 (soft breaks end in a space),
    an optional signature under "-- "."""
    text = compose(r, r.when(r.lang.thunderbird), lambda lines: _flowed_or_gt(r, lines))
    agent = ("User-Agent", "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Thunderbird/128.5.0")
    return message(headers(r, mailer=agent), with_attachment(r, text_part(r, text, "; format=flowed")))


@client("thunderbird-html", "Thunderbird (HTML)", "html")
def thunderbird_html(r: Reply) -> bytes:
    """Thunderbird in HTML: moz-cite-prefix (its text broken across source lines), <blockquote
    type="cite">, the words under it (bottom) or in a <p> above it (top)."""
    prefix = r.when(r.lang.thunderbird)
    cut = prefix.rfind(" ", 0, len(prefix) - 3)
    prefix_html = escape(prefix[:cut]) + "\n      " + escape(prefix[cut + 1:])
    quote = (f'    <div class="moz-cite-prefix">{prefix_html}<br>\n    </div>\n    <blockquote type="cite"\n'
             f'cite="mid:{r.o.message_id.strip("<>")}">\n      {r.o.html_body}\n    </blockquote>\n')
    words = "    " + html_lines(r, "{}<br>\n    ", "<br>\n    ")
    body = (f"<p>{words}</p>\n{quote}" if r.posting == "top" else f"{quote}{words}\n")
    html = ('<!DOCTYPE html>\n<html>\n  <head>\n    <meta http-equiv="Content-Type" content="text/html; '
            f'charset={r.charset}">\n  </head>\n  <body>\n{body}  </body>\n</html>\n')
    agent = ("User-Agent", "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:128.0) Gecko/20100101 Thunderbird/128.5.0")
    return message(headers(r, mailer=agent), with_attachment(r, html_part(r, html)))


@client("k9", "K-9 Mail / Thunderbird for Android", "plain")
def k9(r: Reply) -> bytes:
    """K-9 Mail: the words, blank lines, the attribution, the quote; its signature under "-- "."""
    text = compose(r, r.when(r.lang.extra.get("k9") or r.lang.apple) + "\n", gt(r.o), gap="\n\n\n")
    return message(headers(r, mailer=("User-Agent", "K-9 Mail for Android")), text_part(r, text))


@client("mutt", "Mutt / NeoMutt", "plain")
def mutt(r: Reply) -> bytes:
    """Mutt: the attribution, "> " quotes (">" for a blank line), words under or between them."""
    text = compose(r, r.extra("mutt"), gt(r.o))
    return message(headers(r, mailer=("User-Agent", "NeoMutt/20231103")), text_part(r, text))


@client("mutt-signed", "Mutt with a PGP/MIME signature", "multipart")
def mutt_signed(r: Reply) -> bytes:
    """Mutt signing with PGP/MIME: multipart/signed, the text then the signature part."""
    text = compose(r, r.extra("mutt"), gt(r.o))
    signature = ("-----BEGIN PGP SIGNATURE-----\n\niHUEARYKAB0WIQT4bWlkZGxlLWVhcnRoLXNpZ25hdHVyZQAKCRBhbGljZS1rZXkA\n"
                 "=Zm9v\n-----END PGP SIGNATURE-----\n")
    sig = Part("pgp-signature", maintype="application", data=signature.encode(), encoding="7bit",
               params='; name="signature.asc"', headers=[("Content-Description", "OpenPGP digital signature")])
    body = Multipart("signed", [text_part(r, text), sig], f"{r.uid()[:16]}",
                     params='; micalg=pgp-sha256;\r\n\tprotocol="application/pgp-signature"')
    return message(headers(r, mailer=("User-Agent", "Mutt/2.2.12 (2023-09-09)")), body)


@client("evolution", "Evolution", "plain")
def evolution(r: Reply) -> bytes:
    """Evolution: "On Wed, 2026-11-25 at 17:46 +0000, pbem wrote:", "> " quotes."""
    text = compose(r, r.extra("evolution"), gt(r.o))
    return message(headers(r, mailer=("X-Mailer", "Evolution 3.50.3-1")), text_part(r, text))


@client("thebat", "The Bat!", "plain")
def thebat(r: Reply) -> bytes:
    """The Bat!: a greeting its template writes, "Вы писали …:", the quote, the words, its signature."""
    hello = r.extra("thebat_hello")
    quote = r.o.quoted()
    sig = f"-- \n{r.extra('thebat_sig')}\n {r.name}                          mailto:{r.sender}"
    text = f"{hello}\n\n{r.extra('thebat')}\n\n{quote}\n\n{r.words}\n\n{sig}\n"
    return message(headers(r, mailer=("X-Mailer", "The Bat! (v10.5.3) Professional")), text_part(r, text))


@client("becky", "Becky! Internet Mail", "plain")
def becky(r: Reply) -> bytes:
    """Becky!: the attribution on two lines (date, then sender "wrote:"), "> " quotes, the words on top."""
    text = compose(r, r.extra("becky") + "\n", gt(r.o))
    return message(headers(r, mailer=("X-Mailer", "Becky! ver. 2.81.04"), subject_charset=r.charset),
                   text_part(r, text))


@client("sparrow", "Sparrow", "multipart")
def sparrow(r: Reply) -> bytes:
    """Sparrow: the words, its signature under "-- ", then the attribution and the quote."""
    sig = f"-- \n{r.name}\nSent with Sparrow (http://www.sparrowmailapp.com/?sig)"
    attribution = r.when("On {WD}, {MON} {d}, {yyyy} at {h}:{MM} {ampm}, {name} wrote:")
    text = f"{r.words} \n\n{sig}\n\n\n{attribution}\n\n{r.o.quoted()}\n\n\n"
    html = (f'<div>{html_lines(r, "<span>{}</span><br>", "<br>")}</div><div><div><br></div><div>--&nbsp;</div>'
            f'<div>{escape(r.name)}</div><div>Sent with <a href="http://www.sparrowmailapp.com/?sig">Sparrow</a>'
            f'</div></div><p style="color: #A0A0A8;">{escape(attribution)}</p><blockquote type="cite" '
            f'style="border-left-style:solid;border-width:1px;margin-left:0px;padding-left:10px;"><span><div>'
            f"<div>{r.o.html_body}</div></div></span></blockquote>")
    return message(headers(r, mailer=("X-Mailer", "sparrow 1.6.4 (build 1178)")), alternative(r, text, html))


# Webmails ----------------------------------------------------------------------------------------------


@client("yahoo", "Yahoo Mail (web)", "multipart")
def yahoo(r: Reply) -> bytes:
    """Yahoo Mail: the plain part carries the original unquoted under an indented attribution; the HTML
    has it in div.yahoo_quoted."""
    attribution = r.extra("yahoo")
    text = f"{r.words}\n\n    {attribution}  \n \n \n {r.o.text}\n"
    style = "font-family:Helvetica Neue, Helvetica, Arial, sans-serif;font-size:13px;"
    html = (f'<html><head></head><body><div class="ydp3a1b2c3dyahoo-style-wrap" style="{style}">'
            + html_lines(r, '<div dir="ltr" data-setdir="false">{}</div>', '<div dir="ltr" data-setdir="false">'
                            "<br></div>") +
            f'</div><div id="yahoo_quoted_{r.uid()[:10]}" class="yahoo_quoted">\n<div style="{style}color:#26282a;">\n'
            f"<div>{escape(attribution)}</div><div><br></div><div><br></div><div><div id=\"yiv{r.uid()[:10]}\">"
            f"{r.o.html_body}</div></div></div></div></body></html>")
    return message(headers(r, domain="mail.yahoo.com", mailer=("X-Mailer", "WebService/1.1.22806 YMailNorrin")),
                   alternative(r, text, html))


@client("yahoo-android", "Yahoo Mail for Android", "html")
def yahoo_android(r: Reply) -> bytes:
    """Yahoo Mail's Android app, HTML only: the words, its footer link, then div.yahoo_quoted."""
    footer = r.extra("yahoo_android")
    attribution = r.extra("yahoo")
    html = (f'<html><head></head><body>{html_lines(r)}<br><br><div id="ymail_android_signature">'
            f'<a href="https://mail.onelink.me/107872968?pid=nativeplacement">{escape(footer)}</a></div>'
            f'<div id="yahoo_quoted_{r.uid()[:10]}" class="yahoo_quoted"><div>{escape(attribution)}</div>'
            f"<div><br></div><blockquote style=\"margin: 0 0 20px 0;\"><div>{r.o.html_body}</div></blockquote>"
            "</div></body></html>")
    return message(headers(r, domain="mail.yahoo.com"), html_part(r, html))


@client("yahoo-classic", "Yahoo Mail (classic, plain text)", "plain")
def yahoo_classic(r: Reply) -> bytes:
    """Classic Yahoo Mail in plain text: "----- Original Message -----" and a header block with Cc."""
    block = header_block(("From", "To", "Cc", "Sent", "Subject"),
                         [f"{r.o.sender_name} <{r.o.sender_addr}>", r.o.to_addr, "",
                          r.when("{WD}, {MON} {d}, {yyyy} {h}:{MM} {ampm}"), r.o.subject])
    text = f"{r.words}\n\n\n----- Original Message -----\n{block}\n\n{r.o.text}\n"
    return message(headers(r, domain="web114411.mail.gq1.yahoo.com",
                           mailer=("X-Mailer", "YahooMailWebService/0.8.117.340979")), text_part(r, text))


@client("aol", "AOL Mail", "multipart")
def aol(r: Reply) -> bytes:
    """AOL Mail: "-----Original Message-----" with From, To, Sent and Subject, the original unquoted."""
    values = [f"{r.o.sender_name} <{r.o.sender_addr}>", f"{r.name} <{r.o.to_addr}>",
              r.when("{wd}, {mon} {d}, {yyyy} {h}:{MM} pm"), r.o.subject]
    block = header_block(("From", "To", "Sent", "Subject"), values)
    text = f"{r.words}\n\n\n\n-----Original Message-----\n{block}\n\n\n{r.o.text}\n\n \n"
    html = (f"<font color='black' size='2' face='arial'>{html_lines(r, '{}<br>', '<br>')}\n<br>\n<br>\n"
            '<div style="font-family:arial,helvetica;font-size:10pt;color:black">-----Original Message-----<br>\n'
            + "<br>\n".join(f"{label}: {escape(v)}" for label, v in zip(("From", "To", "Sent", "Subject"), values,
                                                                       strict=True)) +
            f'<br>\n\n<br>\n\n<div id="AOLMsgPart_2_{r.uid()[:8]}">{r.o.html_body}</div>\n</div>\n</font>')
    return message(headers(r, domain="webmail-d070.sysops.aol.com"), alternative(r, text, html))


@client("zimbra", "Zimbra", "multipart")
def zimbra(r: Reply) -> bytes:
    """Zimbra's web client: "----- Original Message -----" and a header block, each line with a
    trailing space; hr#zwchr in the HTML."""
    values = [r.o.sender_addr, r.o.to_addr, r.when("{WD}, {MON} {d}, {yyyy} {h}:{MM}:{SS} {ampm}"), r.o.subject]
    block = "\n".join(f"{label}: {v} " for label, v in zip(("From", "To", "Sent", "Subject"), values, strict=True))
    text = f"{r.words} \n\n----- Original Message -----\n{block}\n\n{r.o.text} \n"
    html = ("<html><body><div style='font-family: Arial; font-size: 12pt; color: #000000'>" +
            html_lines(r, "{}<br>", "<br>") + '<br><hr id="zwchr">' +
            "".join(f"<b>{label}: </b>{escape(v)}<br>" for label, v in zip(("From", "To", "Sent", "Subject"), values,
                                                                          strict=True)) +
            f"<br>{r.o.html_body}<br></div></body></html>")
    return message(headers(r, domain="sz0152a.westchester.pa.mail.comcast.net",
                           mailer=("X-Mailer", "Zimbra 9.0.0_GA_4546 (ZimbraWebClient - FF120 (Linux)/9.0.0)")),
                   alternative(r, text, html))


@client("zimbra-free", "Zimbra (Free.fr webmail)", "plain")
def zimbra_free(r: Reply) -> bytes:
    """Free's Zimbra webmail: zero-width spaces around each paragraph the player wrote, then "- Le … a
    écrit :" and a ">" quote."""
    zw = "\u200b"
    words = "\n".join(f"{zw}{line}{zw}" if line.strip() else line for line in r.words.split("\n"))
    text = f"{words}\n\n{r.extra('zimbra')}\n{r.o.quoted()}\n"
    return message(headers(r, domain="free.fr", mailer=("X-Mailer", "Zimbra 8.8.15_GA_3928 (ZimbraWebClient)")),
                   text_part(r, text))


@client("blackberry", "BlackBerry 10 Hub", "html")
def blackberry(r: Reply) -> bytes:
    """BlackBerry Hub, HTML only: the words in BB10_response_div, then a table holding the header block
    (with "Reply To:") and the original."""
    style = "font-size: initial; font-family: Calibri, 'Slate Pro', sans-serif; color: rgb(31, 73, 125);"
    rows = "".join(f"<div><b>{label}: </b>{escape(v)}</div>" for label, v in zip(
        ("From", "Sent", "To", "Reply To", "Subject"),
        [r.o.sender_name, r.when("{WD}, {MON} {d}, {yyyy} {HH}:{MM}"), r.o.to_addr, r.o.reply_to, r.o.subject],
        strict=True))
    html = (f'<html><head></head><body style="background-color: rgb(255, 255, 255); line-height: initial;">'
            f'<div id="BB10_response_div" style="width: 100%; {style}">{html_lines(r, "{}<br>", "<br>")}</div>'
            f'{" " * 40}<div id="response_div_spacer" style="width: 100%; {style}"><br style="display:initial"></div>'
            f'<div id="_signaturePlaceholder" style="{style}"></div><table width="100%" '
            'style="background-color:white;border-spacing:0px;"> <tbody><tr><td id="_persistentHeaderContainer" '
            'colspan="2"><div id="_persistentHeader" style="border-style: solid none none; border-top-color: '
            f'rgb(181, 196, 223); border-top-width: 1pt; padding: 3pt 0in 0in;">  {rows}</div></td></tr></tbody>'
            '</table><div id="_persistentHeaderEnd" style="border-style: solid none none;"></div><br>'
            f'<div id="_originalContent" style="">{r.o.html_body}\n<br></div></body></html>')
    return message(headers(r, mailer=("X-Mailer", "BlackBerry Email (10.3.3.2163)")), html_part(r, html))


@client("hotmail-2012", "Hotmail (2012)", "multipart")
def hotmail_2012(r: Reply) -> bytes:
    """Old Hotmail: a quoted header block (Subject, From, To, Date) over the quote."""
    when = format_datetime(r.o.date)
    head = f"> Subject: {r.o.subject}\n> From: {r.o.sender_addr}\n> To: {r.o.to_addr}\n> Date: {when}\n> "
    text = f"\n{r.words}\n\n{head}\n{r.o.quoted('> ', '> ')}\n \t\t \t   \t\t  \n"
    html = ("<html>\n<head>\n<style><!--\n.hmmessage P\n{\nmargin:0px;\npadding:0px\n}\n--></style></head>\n"
            f"<body class='hmmessage'><div dir='ltr'>\n{html_lines(r, '{}<br>', '<br>')}<br><div>"
            f'<div id="SkyDrivePlaceholder"></div>{escape(head).replace(chr(10), "<br>")}<br>'
            + "<br>".join("&gt; " + escape(line) for line in r.o.lines()) + "<br></div> \t\t \t   \t\t  </div>"
            "</body>\n</html>")
    return message(headers(r, "RE:", domain="phx.gbl"), alternative(r, text, html))


@client("windows-mail", "Mail for Windows 10", "multipart")
def windows_mail(r: Reply) -> bytes:
    """Mail for Windows 10: its footer, then an unquoted header block and the original."""
    labels = r.lang.outlook
    values = [r.o.sender_name, r.when(r.lang.outlook_date), r.o.to_addr, r.o.subject]
    footer = r.extra("windows")
    text = f"{r.words}\n\n{footer}\n\n{header_block(labels, values)}\n\n{r.o.text}\n"
    html = (_WORD_HEAD.format(charset=r.charset) + _word_words(r) +
            f"<p class=MsoNormal><o:p>&nbsp;</o:p></p><p class=MsoNormal>{escape(footer)}</p>"
            "<p class=MsoNormal><o:p>&nbsp;</o:p></p><div style='mso-element:para-border-div;border:none;"
            "border-top:solid #E1E1E1 1.0pt;padding:3.0pt 0cm 0cm 0cm'><p class=MsoNormal style='border:none;"
            f"padding:0cm'>{html_header_block(labels, values)}</p></div><p class=MsoNormal><o:p>&nbsp;</o:p></p>"
            f"{r.o.html_body}</div></body></html>")
    return message(headers(r, r.lang.reply_prefix, domain="mx.example.org", to='"{addr}" <{addr}>'),
                   alternative(r, text, html, f"_{r.uid()[:8].upper()}-0B1C-4E5C-A8F7-8E58F3B3C0D1_"))


@client("windows-live-mail", "Windows Mail (8.1, HTML only)", "html")
def windows_live_mail(r: Reply) -> bytes:
    """Windows Mail of Windows 8: HTML only; the header block (no Subject line) in a border-top div."""
    labels = r.lang.outlook
    font = "font-family: 'Calibri', 'Segoe UI', 'Meiryo', 'Microsoft YaHei UI', sans-serif;font-size:12pt;"
    html = ('<html>\n<head>\n<meta name="generator" content="Windows Mail 17.5.9600.20498">\n</head>\n'
            f'<body dir="ltr">\n<div data-externalstyle="false" dir="ltr" style="{font}">{html_lines(r)}'
            '<div data-signatureblock="true"><div><br></div><div><br></div></div><div style="padding-top: 5px; '
            'border-top-color: rgb(229, 229, 229); border-top-width: 1px; border-top-style: solid;"><div>'
            f"<font style='line-height: 15pt; {font}'><b>{escape(labels[0])}:</b>&nbsp;<a href=\"mailto:"
            f'{r.o.sender_addr}" target="_parent">{escape(r.o.sender_name)}</a><br><b>{escape(labels[1])}:</b>'
            f"&nbsp;\u200e{escape(r.when(r.lang.outlook_date))}<br><b>{escape(labels[2])}:</b>&nbsp;<a "
            f'href="mailto:{r.o.to_addr}" target="_parent">{escape(r.o.to_addr)}</a></font></div></div><div><br>'
            f'</div><div dir="">{r.o.html_body}\n</div></div>\n</body>\n</html>\n')
    return message(headers(r, "RE:"), html_part(r, html))


@client("samsung", "Samsung Email", "multipart")
def samsung(r: Reply) -> bytes:
    """Samsung Email: its footer, then "-------- Original message --------" and a header block that
    says Date (Datum, Fecha …) rather than Sent."""
    sep = r.lang.extra.get("samsung_sep", "-------- Original message --------")
    labels = r.lang.extra.get("samsung_labels", "From|Date|To|Subject").split("|")
    values = [f"{r.o.sender_name} <{r.o.sender_addr}> ", r.when("{dd}/{mm}/{yyyy} {HH}:{MM} (GMT+00:00) "),
              f"{r.o.to_addr} ", f"{r.o.subject} "]
    footer = r.extra("samsung")
    text = f"{r.words}\n\n\n\n{footer}\n\n\n{sep}\n{header_block(labels, values)}\n\n{r.o.text}\n"
    html = (f'<html><head><meta http-equiv="Content-Type" content="text/html; charset={r.charset}"></head><body '
            f'dir="auto">{html_lines(r, "<div dir=auto>{}</div>", "<div dir=auto><br></div>")}<div dir="auto">'
            f'<br></div><div dir="auto"><br></div><div id="composer_signature" dir="auto"><div style="font-size:'
            f'12px;color:#575757" dir="auto">{escape(footer)}</div></div><div dir="auto"><br></div><div><br></div>'
            f'<div align="left" dir="auto" style="font-size:100%;color:#000000"><div>{escape(sep)}</div><div>'
            + "</div><div>".join(f"{escape(label)}: {escape(v)}" for label, v in zip(labels, values, strict=True)) +
            f"</div><div><br></div></div>{r.o.html_body}</body></html>")
    return message(headers(r, domain="email.android.com"), alternative(r, text, html))


@client("zoho", "Zoho Mail", "html")
def zoho(r: Reply) -> bytes:
    """Zoho Mail, HTML: "---- On … wrote ----" (no colon) over a blockquote, in div.zmail_extra."""
    attribution = r.extra("zoho")
    html = ('<!DOCTYPE html><html><head><meta content="text/html;charset=UTF-8" http-equiv="Content-Type"></head>'
            f'<body><div style="font-family: Verdana, Arial, Helvetica, sans-serif; font-size: 10pt;">'
            f'{html_lines(r)}<div><br></div><div class="zmail_extra_hr" style="border-top: 1px solid rgb(204, 204,'
            f' 204); height: 0px; margin-top: 10px; margin-bottom: 10px; line-height: 0px;"><br></div>'
            f'<div class="zmail_extra" data-zbluepencil-ignore="true"><div><br></div><div id="Zm-_Id_-Sgn1">'
            f'{escape(attribution)}</div><div><br></div><blockquote style="margin: 0px;"><div>{r.o.html_body}'
            "</div></blockquote></div><div><br></div></div><br></body></html>")
    return message(headers(r, domain="zoho.com", mailer=("User-Agent", "Zoho Mail")), html_part(r, html))


@client("proton", "Proton Mail", "multipart")
def proton(r: Reply) -> bytes:
    """Proton Mail: its signature line under the words, then an attribution and a ">" quote."""
    footer = "Sent with Proton Mail secure email."
    attribution = r.extra("proton")
    text = compose(r, attribution + "\n", gt(r.o), footer=footer)
    html = (f'<div style="font-family: Arial, sans-serif; font-size: 14px;">{html_lines(r)}</div><div style="'
            'font-family: Arial, sans-serif; font-size: 14px;"><br></div><div class="protonmail_signature_block">'
            f'<div class="protonmail_signature_block-proton">{escape(footer)}</div></div><div style="font-family:'
            f' Arial, sans-serif; font-size: 14px;"><br></div><div class="protonmail_quote">{escape(attribution)}'
            f'<br><blockquote class="protonmail_quote" type="cite">{r.o.html_body}</blockquote><br></div>')
    return message(headers(r, domain="proton.me"), alternative(r, text, html))


@client("fastmail", "Fastmail", "multipart")
def fastmail(r: Reply) -> bytes:
    """Fastmail: "On Wed, 25 Nov 2026, at 17:46, pbem wrote:", blockquote#qt."""
    attribution = r.extra("fastmail")
    text = compose(r, attribution, gt(r.o))
    html = (f'<!DOCTYPE html><html><head><title></title></head><body>{html_lines(r)}<div><br></div><div>'
            f'{escape(attribution)}</div><blockquote type="cite" id="qt" style="">{r.o.html_body}</blockquote>'
            "<div><br></div></body></html>")
    return message(headers(r, domain="app.fastmail.com", mailer=("User-Agent", "Cyrus-JMAP/3.11.0")),
                   alternative(r, text, html))


@client("roundcube", "Roundcube", "plain")
def roundcube(r: Reply) -> bytes:
    """Roundcube: "Am 2026-11-25 17:46, schrieb pbem:", a flowed ">" quote, a signature under "-- "."""
    text = compose(r, r.when(r.lang.extra.get("roundcube") or LANGS["de"].extra["roundcube"]) + "\n",
                   lambda lines: _flowed_or_gt(r, lines))
    return message(headers(r, domain="webmail.example.net", mailer=("User-Agent", "Roundcube Webmail/1.6.9")),
                   text_part(r, text, "; format=flowed"))


@client("spark", "Spark", "multipart")
def spark(r: Reply) -> bytes:
    """Spark: "On 25 Nov 2026 at 17:46 +0000, pbem <…>, wrote:", div[name=messageReplySection]."""
    attribution = r.extra("spark")
    text = compose(r, attribution, gt(r.o))
    html = (f'<html><head></head><body><div name="messageBodySection">{html_lines(r, "<div dir=auto>{}</div>")}'
            f'</div><div name="messageReplySection">{escape(attribution)}<br><blockquote type="cite" '
            f'style="border-left-color: grey; border-left-width: thin; border-left-style: solid; margin: 5px 5px;'
            f'padding-left: 10px;">{r.o.html_body}</blockquote></div></body></html>')
    return message(headers(r, domain="Spark"), alternative(r, text, html))


@client("mailru", "Mail.ru", "html")
def mailru(r: Reply) -> bytes:
    """Mail.ru's webmail, HTML only: "Среда, 25 ноября 2026, 17:46 +03:00 от pbem <…>:" over a
    blockquote."""
    attribution = r.extra("mailru")
    html = (f'\n<HTML><BODY>{html_lines(r, "<div>{}</div>", "<div>&nbsp;</div>")}<div>&nbsp;</div><div '
            f'data-signature-widget="container"><div data-signature-widget="content"><div>-- <br>{escape(r.name)}'
            f"</div></div></div><div>&nbsp;</div><br><br>{escape(attribution[0].upper() + attribution[1:])}<br>\n"
            '<blockquote style="border-left:1px solid #0857A6; margin:10px; padding:0 0 0 10px;">\n\t<div id="">\n'
            f'<div class="js-helper js-readmsg-msg">\n\t<div>\n\t\t<div id="style_1700_BODY">{r.o.html_body}\n'
            "</div>\n\t</div>\n</div>\n</div>\n</blockquote>\n<br></BODY></HTML>\n")
    return message(headers(r, domain="f123.i.mail.ru"), html_part(r, html))


@client("yandex", "Yandex Mail", "html")
def yandex(r: Reply) -> bytes:
    """Yandex Mail, HTML only: '25.11.2026, 17:46, "pbem" <…>:' over a blockquote."""
    attribution = r.extra("yandex")
    html = (f'<div>{html_lines(r, "<div>{}</div>", "<div> </div>")}</div><div> </div><div>-- </div>'
            f"<div>{escape(r.name)}</div><div> </div><div> </div><div>{escape(attribution)}</div><blockquote>"
            f"{r.o.html_body}</blockquote>")
    return message(headers(r, domain="mail.yandex.ru"), html_part(r, html))


@client("foxmail", "Foxmail / QQ Mail", "multipart")
def foxmail(r: Reply) -> bytes:
    """Foxmail: "------------------&nbsp;原始邮件&nbsp;------------------" (the entity left in the plain
    part as it sends it), a header block with 发件人/发送时间/收件人/主题, the original unquoted."""
    labels = r.lang.extra["foxmail_labels"].split("|")
    values = [f'"{r.o.sender_name}"<{r.o.sender_addr}>;', r.when(r.lang.extra["foxmail_date"]),
              f'"{r.name}"<{r.o.to_addr}>;', r.o.subject]
    sep = r.lang.extra["foxmail_sep"]
    block = "\n".join(f"{label}: {v}" for label, v in zip(labels, values, strict=True))
    text = f"{r.words}\n\n\n{sep.replace(' 原始邮件 ', '&nbsp;原始邮件&nbsp;')}\n{block}\n\n\n\n{r.o.text}\n"
    html = (f'<meta http-equiv="Content-Type" content="text/html; charset={r.charset}">{html_lines(r)}<div><br>'
            '</div><div><br></div><div style="font-size: 12px;font-family: Arial Narrow;padding:2px 0 2px 0;">'
            '------------------&nbsp;原始邮件&nbsp;------------------</div><div style="font-size: 12px;background:'
            '#efefef;padding:8px;">' + "".join(f"<div><b>{label}:</b>&nbsp;{escape(v)}</div>"
                                                for label, v in zip(labels, values, strict=True)) +
            f"</div><div><br></div>{r.o.html_body}")
    return message(headers(r, "回复：", domain="qq.com", mailer=("X-Mailer", "Foxmail 7.2.25.228[cn]"),
                           subject_charset=r.charset), alternative(r, text, html))


@client("netease", "NetEase Mail (163.com)", "html")
def netease(r: Reply) -> bytes:
    """163.com's webmail, HTML only: the attribution in a <pre>, blockquote#isReplyContent."""
    attribution = r.when(r.lang.extra["netease"])
    html = (f'<div style="line-height:1.7;color:#000000;font-size:14px;font-family:Arial">{html_lines(r)}'
            '<br><br><div style="position:relative;zoom:1"></div><div id="divNeteaseMailCard"></div><br>'
            f"<pre><br>{escape(attribution)}<br></pre><blockquote id=\"isReplyContent\" style=\"PADDING-LEFT: 1ex;"
            f' MARGIN: 0px 0px 0px 0.8ex; BORDER-LEFT: #ccc 1px solid\">{r.o.html_body}</blockquote></div>')
    return message(headers(r, domain="163.com", subject_charset=r.charset), html_part(r, html))


@client("naver", "Naver Mail", "html")
def naver(r: Reply) -> bytes:
    """Naver Mail, HTML only: "-----Original Message-----" and From/To/Cc/Sent/Subject lines, then the
    original as it was (no blockquote)."""
    block = r.when(r.lang.extra["naver"], to=r.o.to_addr, subject=r.o.subject)
    html = (f'<div class="__aliyun_email_body_block"><div style="font-size:10pt; font-family:Gulim;">'
            f"{html_lines(r, '<p>{}</p>', '<p>&nbsp;</p>')}<p>&nbsp;</p><p>&nbsp;</p>"
            + "".join(f"<div>{escape(line)}</div>" for line in block.split("\n")) +
            f"<div><br></div>{r.o.html_body}</div></div>")
    return message(headers(r, "RE:", domain="naver.com"), html_part(r, html))


@client("seznam", "Seznam.cz Email", "plain")
def seznam(r: Reply) -> bytes:
    """Seznam's webmail: "---------- Původní e-mail ----------", Od/Komu/Datum/Předmět, a ">" quote."""
    labels = r.lang.extra["seznam_labels"].split("|")
    values = [f"{r.o.sender_name} <{r.o.sender_addr}>", r.o.to_addr, r.when("{d}. {m}. {yyyy} {H}:{MM}:{SS}"),
              r.o.subject]
    text = (f"{r.words}\n\n{r.lang.extra['seznam_sep']}\n{header_block(labels, values)}\n\n"
            f"{r.o.quoted('> ', '> ')}\n")
    return message(headers(r, domain="email.cz", subject_charset=r.charset), text_part(r, text))


@client("wp", "WP Poczta / Onet", "plain")
def wp(r: Reply) -> bytes:
    """The Polish webmails: "Dnia 25 listopada 2026 17:46 pbem <…> napisał(a):" and a ">" quote."""
    text = compose(r, r.when(r.lang.extra["wp"]) + "\n", gt(r.o))
    return message(headers(r, domain="wp.pl", subject_charset=r.charset), text_part(r, text))


@client("libero", "Libero Mail", "plain")
def libero(r: Reply) -> bytes:
    """Libero's webmail: "----Messaggio originale----" and Da/Data/A/Ogg, the original unquoted."""
    block = r.when(r.lang.extra["libero"], to=r.o.to_addr, subject=r.o.subject)
    text = f"{r.words}\n\n\n{block}\n\n{r.o.text}\n\n\n"
    return message(headers(r, domain="libero.it"), text_part(r, text))


@client("ukrnet", "ukr.net", "plain")
def ukrnet(r: Reply) -> bytes:
    """ukr.net's webmail: '25 листопада 2026, 17:46:50, від "pbem" <…>:' and a ">" quote."""
    text = compose(r, r.when(r.lang.extra["ukrnet"]) + "\n", gt(r.o))
    return message(headers(r, domain="ukr.net", subject_charset=r.charset), text_part(r, text))


@client("generic", "a plain-text program (Alpine, Claws Mail, Sylpheed)", "plain")
def generic(r: Reply) -> bytes:
    """A plain-text program: Thunderbird's attribution in the language and a "> " quote."""
    text = compose(r, r.when(r.lang.thunderbird), gt(r.o))
    return message(headers(r, mailer=("User-Agent", "Alpine 2.26 (DEB 649 2022-06-02)"), subject_charset=r.charset),
                   text_part(r, text))
