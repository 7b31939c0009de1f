"""Reading a reply: the player's own words (step 1: without the mail answered, however their mail program
quoted it, attributions and header blocks in nineteen languages, signatures and phone footers), then the
move as a person reads it and the comment (step 2).  The end-to-end path, over SMTP, is in
test_mail_reading.py."""

from __future__ import annotations

import pytest

import games
from pbem.mailin.htmltext import html_to_text
from pbem.mailin.quotes import own_words
from pbem.mailin.reading import Position, read_reply

# A move request as the server writes one (the test of the real one is end to end).
SENT = """[pbem] bob played a2 (move 2).

It is your move in Cambio #12 (move 3); you play O. Time left: 3 days.

     a b c
  3  . . .
  2  X . .
  1  . . .

Legal moves: a3, b1, b2, b3, c1, c2, c3

To move, reply to this mail with your move on the first line, for example:

    b3 #3

Anything you write under the move line goes to the other players as your comment.
Or play with one click: https://pbem.example.org/m/eyJnIjoxMiwicyI6MH0.TOKEN
The game on the web: https://pbem.example.org/games/12
Players: O alice, X bob"""
QUOTED = "\n".join(f"> {line}" if line else ">" for line in SENT.split("\n"))
# As a program that rewraps what it quotes (at 40 columns) and drops the blank lines would paste it.
REWRAPPED = "\n".join(
    line[i : i + 40] for line in SENT.split("\n") if line.strip() for i in range(0, len(line), 40)
)


def words(text: str, answered: tuple[str, ...] = (SENT,)) -> list[str]:
    """The player's own words, without blank lines at the ends (step 2 takes those off too)."""
    found = own_words(text, answered)
    while found and not found[-1]:
        found.pop()
    while found and not found[0]:
        found.pop(0)
    return found


# Replies above the mail answered, in the shapes of mail programs and languages: (reply, own words).
TOP_POSTED = {
    "gmail, en": (f"b3\nGood luck!\n\nOn Wed, Nov 25, 2026 at 4:46 PM pbem <pbem@pbem.org> wrote:\n"
                  f"{QUOTED}", ["b3", "Good luck!"]),
    "gmail, wrapped attribution": (f"b3\n\nOn Wed, Nov 25, 2026 at 4:46 PM pbem\n<play+x@pbem.example.org> "
                                   f"wrote:\n{QUOTED}", ["b3"]),
    "outlook, de (the leak)": (
        f"b3\n\nViel Glück – gutes Spiel!\n\n \n\nVon: pbem <pbem@pbem.org> \nGesendet: Mittwoch, 25. "
        f"November 2026 17:46\nAn: alice@example.org\nBetreff: [pbem] Cambio #12\n\n \n\n{SENT}\n",
        ["b3", "", "Viel Glück – gutes Spiel!"]),
    "outlook, es": (f"b3\nSuerte\n\nDe: pbem <pbem@pbem.org>\nEnviado el: miércoles, 25 de noviembre "
                    f"de 2026 17:46\nPara: alice@example.org\nAsunto: Cambio\n\n{SENT}", ["b3", "Suerte"]),
    "outlook, it": (f"b3\nIn bocca al lupo\n\nDa: pbem\nInviato: mercoledì 25 novembre 2026 17:46\nA: alice\n"
                    f"Oggetto: Cambio\n\n{SENT}", ["b3", "In bocca al lupo"]),
    "outlook, sv": (f"b3\nLycka till\nFrån: pbem\nSkickat: den 25 november 2026 17:46\nTill: alice\nÄmne: x\n"
                    f"{SENT}", ["b3", "Lycka till"]),
    "outlook, fi": (f"b3\nOnnea\n\nLähettäjä: pbem\nLähetetty: keskiviikko 25. marraskuuta 2026 17.46\n"
                    f"Vastaanottaja: alice\nAihe: x\n\n{SENT}", ["b3", "Onnea"]),
    "outlook, pl": (f"b3\nPowodzenia\n\nOd: pbem\nWysłano: środa, 25 listopada 2026 17:46\nDo: alice\n"
                    f"Temat: x\n\n{SENT}", ["b3", "Powodzenia"]),
    "outlook, cs": (f"b3\n\nOd: pbem\nOdesláno: středa 25. listopadu 2026 17:46\nKomu: alice\nPředmět: x\n\n"
                    f"{SENT}", ["b3"]),
    "outlook, ru": (f"b3\nУдачи!\n\nОт: pbem\nОтправлено: 25 ноября 2026 г. 17:46\nКому: alice\nТема: x\n\n"
                    f"{SENT}", ["b3", "Удачи!"]),
    "outlook, ja": (f"b3\nよろしくお願いします\n\n差出人: pbem\n送信日時: 2026年11月25日 17:46\n宛先: alice\n"
                    f"件名: x\n\n{SENT}", ["b3", "よろしくお願いします"]),
    "outlook, zh": (f"b3\n祝你好运\n\n发件人: pbem\n发送时间: 2026年11月25日 17:46\n收件人: alice\n"
                    "主题: x\n\n"
                    f"{SENT}", ["b3", "祝你好运"]),
    "outlook, ko": (f"b3\n행운을 빌어요\n\n보낸 사람: pbem\n보낸 날짜: 2026년 11월 25일 수요일 오후 5:46\n"
                    f"받는 사람: alice\n제목: x\n\n{SENT}", ["b3", "행운을 빌어요"]),
    "outlook, tr": (f"b3\nBol şans\n\nKimden: pbem\nGönderildi: 25 Kasım 2026 Çarşamba 17:46\nKime: alice\n"
                    f"Konu: x\n\n{SENT}", ["b3", "Bol şans"]),
    "outlook for android, no header at all": (
        f"b3\n\nGesendet von Outlook für Android<https://aka.ms/x>\n\n{SENT}\n", ["b3"]),
    "a header block in a language of no table": (
        f"b3\nnice\n\nKutoka: pbem\nImetumwa: 25 Nov 2026\nKwa: alice\n\n{SENT}", ["b3", "nice"]),
    "rewrapped and pasted, nothing over it": (f"b3\ngl\n\n{REWRAPPED}", ["b3", "gl"]),
    "original message, aol": (f"b3\nGood luck!\n\n\n-----Original Message-----\nFrom: pbem\nTo: alice\n"
                              f"Sent: Wed, Nov 25, 2026 5:46 pm\nSubject: x\n\n{SENT}", ["b3", "Good luck!"]),
    "original message, yahoo, cut off copy": (
        f"b3\n\n----- Original Message -----\nFrom: pbem\nTo: alice\n{SENT[:300]}", ["b3"]),
    "outlook for ios, fr footer": (
        f"b3\n\nEnvoyé à partir de Outlook pour iOS<https://aka.ms/x>\n"
        f"________________________________\nFrom: pbem\nSent: Wednesday\nTo: alice\nSubject: x\n\n{SENT}",
        ["b3"]),
    "windows mail": (f"b3\nGood luck!\n\nSent from Mail for Windows 10\n\nFrom: pbem\nSent: November 25\n"
                     f"To: alice\nSubject: x\n\n{SENT}", ["b3", "Good luck!"]),
    "ios, footer, quoted attribution": (
        f"B3\nGood luck!\n\nSent from my iPhone\n\n> On Nov 25, 2026, at 16:46, pbem <pbem@pbem.org> "
        f"wrote:\n>\n{QUOTED}", ["B3", "Good luck!"]),
    "k-9, de": (f"b3\nViel Glück!\n\nAm 25.11.2026 5:46 nachm. schrieb pbem <pbem@pbem.org>:\n{QUOTED}",
                ["b3", "Viel Glück!"]),
    "gmail, ru, no verb": (f"b3\nУдачи!\n\nср, 25 нояб. 2026 г. в 17:46, pbem <pbem@pbem.org>:\n\n"
                           f"{QUOTED}", ["b3", "Удачи!"]),
    "gmail, ja, no verb": (f"b3\n\n2026年11月25日(水) 17:46 pbem <pbem@pbem.org>:\n\n{QUOTED}", ["b3"]),
    "gmail, zh": (f"b3\n\npbem <pbem@pbem.org> 于2026年11月25日周三 17:46写道：\n\n{QUOTED}", ["b3"]),
    "gmail, ko": (f"b3\n\n2026년 11월 25일 (수) 오후 5:46, pbem <pbem@pbem.org>님이 작성:\n\n{QUOTED}",
                  ["b3"]),
    "gmail, pt": (f"b3\nBoa sorte\n\nEm qua., 25 de nov. de 2026 às 17:46, pbem <pbem@pbem.org> "
                  f"escreveu:\n\n{QUOTED}", ["b3", "Boa sorte"]),
    "gmail, uk": (f"b3\n\nср, 25 лист. 2026 р. о 17:46 pbem <pbem@pbem.org> пише:\n\n{QUOTED}",
                  ["b3"]),
    "gmail, tr": (f"b3\n\npbem <pbem@pbem.org>, 25 Kas 2026 Çar, 17:46 tarihinde şunu yazdı:\n\n"
                  f"{QUOTED}", ["b3"]),
    "yandex, no verb": (f"b3\n\nУдачи!\n\n25.11.2026, 17:46, \"pbem\" <pbem@pbem.org>:\n{QUOTED}",
                        ["b3", "", "Удачи!"]),
    "zimbra, zero-width spaces": (
        f"\u200bb3\u200b\n\u200bBonne partie\u200b\nAlice\n- Le 2026-11-25 17:46, pbem <pbem@pbem.org> "
        f"a écrit :\n{QUOTED}", ["b3", "Bonne partie", "Alice"]),
    "phone footers, es it nl": (
        f"b3\nEnviado desde mi iPhone\nInviato da iPhone\nVerzonden vanaf mijn iPhone\n\n{QUOTED}", ["b3"]),
    "phone footers, ru zh-tw sv": (
        f"b3\nОтправлено с iPhone\n從我的 iPhone 傳送\nSkickat från min iPhone\n\n{QUOTED}", ["b3"]),
    "phone footers, ja zh ko tr pl cs fi": (
        "b3\niPhoneから送信\n发自我的iPhone\niPhone에서 보냄\niPhone'umdan gönderildi\nWysłane z iPhone'a\n"
        "Odesláno z iPhonu\nLähetetty iPhonesta\nSendt fra min iPhone", ["b3"]),
    "apps' footers": (
        "b3\nSent from Yahoo Mail on Android\nGet Outlook for Android\nVon meinem iPhone gesendet", ["b3"]),
    "signature, then the quote": (
        f"b3 \n-- \nAlice Example\nSent with Sparrow\n\nOn Wednesday, November 25, 2026 at 5:46 PM, pbem "
        f"wrote:\n{QUOTED}", ["b3"]),
}

# Replies under the mail answered, or between its lines.
BOTTOM_POSTED = {
    "gmail, de, the attribution wrapped": (
        f"pbem <pbem@pbem.org> schrieb am Mi., 25.\nNov. 2026 um 17:46 Uhr:\n\n{QUOTED}\n\nb3\nViel Glück",
        ["b3", "Viel Glück"]),
    "android, fr, three lines": (
        f"Le 25 nov. 2026 17:46, \"pbem\"\n<pbem@pbem.org>\na écrit :\n{QUOTED}\n\nb3\nBonne partie",
        ["b3", "Bonne partie"]),
    "gmail, it": (f"Il giorno mer 25 nov 2026 alle ore 17:46 pbem <pbem@pbem.org>\nha scritto:\n\n"
                  f"{QUOTED}\n\nb3", ["b3"]),
    "gmail, pt": (f"Em qua., 25 de nov. de 2026 às 17:46, pbem <\npbem@pbem.org> escreveu:\n\n{QUOTED}"
                  "\n\nb3", ["b3"]),
    "gmail, ru": (f"ср, 25 нояб. 2026 г. в 17:46, pbem <pbem@pbem.org>:\n\n{QUOTED}\n\nb3\nУдачи",
                  ["b3", "Удачи"]),
    "gmail, fi": (f"ke 25. marrask. 2026 klo 17.46 pbem\n(<pbem@pbem.org>) kirjoitti:\n\n{QUOTED}\n\nb3",
                  ["b3"]),
    "gmail, no, the colon on the quote's line": (
        f"ons. 25. nov. 2026 kl. 17:46 skrev pbem <pbem@pbem.org\n>:\n\n{QUOTED}\n\nb3\nLykke til",
        ["b3", "Lykke til"]),
    "gmail, da": (f"Den ons. 25. nov. 2026 kl. 17.46 skrev pbem <pbem@pbem.org>:\n\n{QUOTED}\n\nb3",
                  ["b3"]),
    "gmail, nl": (f"Op wo 25 nov. 2026 om 17:46 schreef pbem <pbem@pbem.org>:\n\n{QUOTED}\n\nb3",
                  ["b3"]),
    "gmail, sv": (f"Den ons 25 nov. 2026 kl 17:46 skrev pbem <pbem@pbem.org>:\n\n{QUOTED}\n\nb3",
                  ["b3"]),
    "gmail, pl": (f"śr., 25 lis 2026 o 17:46 pbem <pbem@pbem.org> napisał(a):\n\n{QUOTED}\n\nb3",
                  ["b3"]),
    "gmail, cs": (f"st 25. 11. 2026 v 17:46 odesílatel pbem <pbem@pbem.org> napsal:\n\n{QUOTED}\n\nb3",
                  ["b3"]),
    "gmail, es": (f"El mié, 25 nov 2026 a las 17:46, pbem (<pbem@pbem.org>) escribió:\n\n{QUOTED}\n\nb3",
                  ["b3"]),
    "thunderbird": (f"On 25/11/2026 17:46, pbem wrote:\n{QUOTED}\n\nb3\nGood luck!", ["b3", "Good luck!"]),
    "mutt, signed": (f"On Wed, Nov 25, 2026 at 04:46:50PM +0000, pbem wrote:\n{QUOTED}\n\nb3\n-- \nAlice\n"
                     "Give me a lever", ["b3"]),
    "outlook, quoted header block": (
        f"> -----Original Message-----\n> From: pbem\n> Sent: Wednesday\n>\n{QUOTED}\nb3\nGood luck!",
        ["b3", "Good luck!"]),
    "inline": ("On Wed, pbem wrote:\n> [pbem] bob played a2 (move 2).\n\nb3, then.\n\n> Legal moves: a3\n\n"
               "Thanks!", ["b3, then.", "", "", "Thanks!"]),
    "pasted under a header block, the answer under it": (
        f"From: pbem\nSent: Wednesday\nTo: alice\nSubject: x\n\n{SENT}\n\nb3\nnice", ["b3", "nice"]),
}


@pytest.mark.parametrize("name", sorted(TOP_POSTED))
def test_the_words_above_the_mail_answered_are_the_players(name: str) -> None:
    text, expected = TOP_POSTED[name]
    assert words(text) == expected


@pytest.mark.parametrize("name", sorted(BOTTOM_POSTED))
def test_the_words_under_the_mail_answered_are_the_players(name: str) -> None:
    text, expected = BOTTOM_POSTED[name]
    assert words(text) == expected


def test_nothing_of_the_mail_answered_is_kept_when_it_is_not_known() -> None:
    """Without the mail answered (a program that keeps no reference, an old mail), a header block still
    ends the player's words, and a header block with nothing above it still hides what is under it."""
    assert words(TOP_POSTED["outlook, de (the leak)"][0], ()) == ["b3", "", "Viel Glück – gutes Spiel!"]
    assert words(f"Von: pbem\nGesendet: Mittwoch\nAn: alice\n\n{SENT}", ()) == []


def test_a_copy_is_judged_by_the_mail_answered_not_by_a_move_or_a_word_in_it() -> None:
    """A move, or a short line that the mail answered happens to hold too, is the player's."""
    assert words("b3 #3\nyour move\n\nThanks") == ["b3 #3", "your move", "", "Thanks"]
    assert words("Legal moves: a3, b1, b2, b3, c1, c2, c3\nb3") == ["b3"]


def test_a_copy_is_found_under_a_long_reply_as_under_a_short_one() -> None:
    """The copy of the mail answered is left out whether the player wrote a line or a page (the pieces
    of many lines are looked up in an index of the mail answered, of a few by a search)."""
    page = [f"{n:03d}: a thought of mine on this game" for n in range(100)]
    for mine in (page[:1], page[:3], page):
        assert words("\n".join([*mine, "", SENT])) == mine
        assert words("\n".join([REWRAPPED, "", *mine])) == mine


def test_the_mails_answered_are_read_only_for_a_line_that_could_copy_them() -> None:
    """A move over quoted lines needs nothing of the mails answered (they are read from the database):
    they are asked for only when a line is long enough to be part of a copy, and then left out."""
    asked: list[int] = []

    def answered() -> tuple[str, ...]:
        asked.append(1)
        return (SENT,)

    assert own_words(f"b3\n\n{QUOTED}", answered) == ["b3", ""] and not asked
    assert own_words(f"b3\n\n{SENT}", answered)[:1] == ["b3"] and asked
    assert len(own_words(f"b3\n\n{SENT}", answered)) < 3


def test_signatures_and_only_signatures() -> None:
    assert words("-- \nBob Example\nExample Ltd.\n\nSent from my iPhone") == []
    assert words("\n--\nBob Example\n\nOn Mon, pbem wrote:\n> It is your move") == []
    under = "-- \nBob\n\nOn Mon, pbem wrote:\n> It is your move\n\nb2\nthanks\n-- \nBob"
    assert words(under) == ["b2", "thanks"]


HTML = {
    "gmail, html only, under the quote": (
        '<div dir="ltr"><div class="gmail_extra"><div class="gmail_quote">On Wed, Nov 25, 2026 at 4:46 PM, '
        'pbem <span dir="ltr">&lt;<a href="mailto:pbem@pbem.org">pbem@pbem.org</a>&gt;</span> '
        'wrote:<br>\n<blockquote class="gmail_quote" style="margin:0">It is your <b>move</b><br>Legal moves: '
        'a3</blockquote></div><br></div><div>b3</div><div>Good luck!</div></div>', ["b3", "Good luck!"]),
    "outlook 2010, the source's line breaks in the header": (
        '<p class="MsoNormal"><span>b3<o:p></o:p></span></p><p class="MsoNormal"><span>よろしく</span></p>'
        '<p class="MsoNormal"><b><span>From:</span></b><span> pbem [mailto:pbem@pbem.org]\n<br>\n'
        '<b>Sent:</b> Wednesday, November 25, 2026 4:46 PM<br>\n<b>To:</b> alice<br>\n<b>Subject:</b> x'
        '</span></p><p>It is your move</p>', ["b3", "よろしく"]),
    "outlook web": (
        '<div>\nb3</div><div>\nGood luck!</div><div id="appendonsend"></div><hr><div id="divRplyFwdMsg">'
        '<b>From:</b> pbem<br><b>Sent:</b> Wednesday</div><div>It is your move</div>', ["b3", "Good luck!"]),
    "outlook desktop": (
        "<div class=WordSection1><p class=MsoNormal>b3<o:p></o:p></p><p class=MsoNormal>Viel Glück</p>"
        "<div style='border:none;border-top:solid #E1E1E1 1.0pt;padding:3.0pt 0cm 0cm 0cm'><p><b>Von:</b> "
        "pbem<br><b>Gesendet:</b> Mittwoch</p></div><p>It is your move, with a link</p></div>",
        ["b3", "Viel Glück"]),
    "blackberry": (
        '<div id="BB10_response_div">b3<br>Good luck!</div><table><tr><td><div id="_persistentHeader">'
        '<div><b>From: </b>pbem</div><div><b>Reply To: </b>play+TOKEN@pbem.example.org</div></div></td></tr>'
        '</table><div id="_originalContent">It is your move</div>', ["b3", "Good luck!"]),
    "thunderbird, under the quote": (
        '<div class="moz-cite-prefix">On 25.11.2026 17:46, pbem\n      wrote:<br>\n</div>\n<blockquote '
        'type="cite">It is your move</blockquote>\nb3<br>\nGood luck!<br>', ["b3", "Good luck!"]),
    "apple, attribution in a quote": (
        '<div>b3</div><div dir="ltr"><br><blockquote type="cite">On Nov 25, 2026, at 16:46, pbem wrote:<br>'
        '</blockquote></div><blockquote type="cite"><div>It is your move</div></blockquote>', ["b3"]),
    "yahoo": ('<div>b3</div><div class="yahoo_quoted"><div>On Wednesday, pbem wrote:</div><div>It is your '
              'move</div></div>', ["b3"]),
    "hotmail": ("<div dir='ltr'>b3<div><br></div><div>Good luck!</div><div><hr id=\"stopSpelling\">Date: "
                "Wed<br>Subject: x<br>It is your move</div></div>", ["b3", "", "Good luck!"]),
}


@pytest.mark.parametrize("name", sorted(HTML))
def test_html_quote_containers_are_quoted(name: str) -> None:
    html, expected = HTML[name]
    assert words(html_to_text(html), ()) == expected


def test_html_keeps_preformatted_lines_and_reads_entities() -> None:
    html = "<pre>a  b\nc</pre><div>b3&nbsp;#1</div><div>gl&amp;hf</div>"
    assert html_to_text(html) == "a b\nc\nb3 #1\ngl&hf"


@pytest.fixture(scope="module")
def cambio() -> Position:
    """O to move in Cambio 3x3 (O's legal moves: a2, b1, b2, b3, c2)."""
    engine = games.get("cambio")
    position = Position.of(engine, engine.new(2, engine.options.load({"size": 3}), 1), 0)
    assert sorted(position.legal) == ["a2", "b1", "b2", "b3", "c2"]
    return position


READINGS = [
    # (the player's own words, the command read, the comment)
    ("b3", "b3", ""),
    ("b3 #7\nNice try.", "b3 #7", "Nice try."),
    ("move b3 #7", "b3 #7", ""),
    ("I'll play b3, good game", "b3", "I'll play b3, good game"),
    ("My move: b3", "b3", "My move: b3"),
    ("b3, good luck!", "b3", "b3, good luck!"),
    ("b3 :)", "b3", ""),
    ("*b3*", "b3", ""),
    ("_b3_!", "b3", ""),
    ('"b3"', "b3", ""),
    ("(b3)", "b3", ""),
    ("b3 👍", "b3", ""),
    ("ｂ３", "b3", ""),
    ("ｂ３　＃７", "b3 #7", ""),
    ("I play b3 #7 now", "b3 #7", "I play b3 #7 now"),
    ("Hi Bob,\n\nb3\n\nCheers, Alice", "b3", "Hi Bob,\n\nCheers, Alice"),
    ("b3\nb3 was forced anyway", "b3", "b3 was forced anyway"),
    ("resign\nWell played.", "resign", "Well played."),
    ("Resign.", "Resign", ""),
    ("Hi,\n\ndraw offer\n\nor b3?", "draw offer", "Hi,\n\nor b3?"),
    # A command is a whole line, never a word in a sentence: nothing is found, and the first line is
    # read as written (and refused as no move).
    ("I resign from the club, not the game", "I resign from the club, not the game", ""),
    ("Resign? Never.", "", ""),
    ("accept it, you must", "", ""),
    ("draw please", "draw please", ""),  # (Refused, saying how a draw offer is written.)
    # A line that is a move by its shape is the command, legal or not (the engine says what is wrong).
    ("b9\nb3 was my other idea", "b9", "b3 was my other idea"),
    # Moves are looked for in the first five lines with anything on them.
    ("1\n2\n3\n4\n5\nb3", "1", "2\n3\n4\n5\nb3"),
]


@pytest.mark.parametrize(("text", "command", "comment"), READINGS)
def test_the_move_is_read_as_a_person_reads_it(
    cambio: Position, text: str, command: str, comment: str
) -> None:
    reading = read_reply(text.split("\n"), cambio)
    assert (reading.command, reading.comment, reading.moves) == (command, comment, [])


@pytest.mark.parametrize(("text", "moves"), [
    ("b3\nb2", ["b3", "b2"]),
    ("b3\nSorry, I mean b2", ["b3", "b2"]),
    ("I like b3 and b2 #3", ["b3", "b2"]),
    ("b3 b2", ["b3", "b2"]),
    ("Hi\nb2 or b3 or a2?", ["b2", "b3", "a2"]),
])
def test_two_moves_are_asked_about_and_nothing_is_passed_on(
    cambio: Position, text: str, moves: list[str]
) -> None:
    reading = read_reply(text.split("\n"), cambio)
    assert (reading.command, reading.comment, reading.moves) == ("", "", moves)
    count = "two" if len(moves) == 2 else "three"
    assert reading.question().startswith(f"I found {count} moves in your reply, ")


@pytest.mark.parametrize(("slug", "players", "text", "command"), [
    # Moves of several words: a line that is one wins, and in a sentence they are read together.
    ("truchet", 2, "^a4 a2<es", "^a4 a2<es"),
    ("truchet", 2, "I'll play ^a4 a2<es now", "^a4 a2<es"),
    ("easyslider", 1, "d1 done", "d1 done"),
    ("easyslider", 1, "Done!", "Done"),
    ("boxoff", 1, "B2 a2", "B2 a2"),
    ("boxoff", 1, "So a2-b2, then", "a2-b2"),
])
def test_moves_of_several_words(slug: str, players: int, text: str, command: str) -> None:
    engine = games.get(slug)
    position = Position.of(engine, engine.new(players, engine.options.load({}), 1), 0)
    assert read_reply([text], position).command == command


def test_without_a_position_only_lines_are_read() -> None:
    assert read_reply(["", "accept", "Gladly."], None).command == "accept"
    assert read_reply(["I'll play b3", "b2"], None).command == "b2"
    assert read_reply([], None).command == ""
