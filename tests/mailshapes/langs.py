"""What mail programs write around a reply, language by language: the attribution line of each family
of programs, Outlook's header block and separator, the phone footers, the reply prefix of subjects.

Templates take {name}, {addr} and the date as {wd}/{WD} (weekday short/long), {mon}/{MON} (month
short/long), {d}, {dd}, {m}, {mm}, {yy}, {yyyy}, {H}, {HH}, {MM}, {SS}, {h} (12-hour clock) and {ampm}.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime


@dataclass(frozen=True)
class Lang:
    """One language as mail programs write it."""

    code: str
    wd: tuple[str, ...]  # Short weekdays, Monday first.
    WD: tuple[str, ...]  # Long weekdays.
    mon: tuple[str, ...]  # Short months, January first.
    MON: tuple[str, ...]  # Long months.
    ampm: tuple[str, str]
    gmail: str  # Gmail's attribution ("On Wed, Nov 25, 2026 at 5:46 PM pbem <…> wrote:").
    apple: str  # Apple Mail's and iOS Mail's.
    thunderbird: str  # Thunderbird's cite prefix (no address).
    outlook: tuple[str, str, str, str]  # The header block's From, Sent, To, Subject.
    outlook_date: str  # How Outlook writes the Sent date.
    original_message: str  # Outlook's separator ("-----Original Message-----").
    iphone: str  # The iPhone footer.
    reply_prefix: str = "RE:"  # Outlook's subject prefix in this language.
    extra: dict[str, str] = field(default_factory=dict)  # Other programs' strings, by program.

    def date(self, template: str, when: datetime, name: str = "pbem", addr: str = "pbem@pbem.localhost",
             **more: str) -> str:
        """``template`` filled in for ``when``, sent by ``name`` <``addr``> (``more`` fills the rest)."""
        h12 = when.hour % 12 or 12
        return template.format(
            name=name, addr=addr, m=when.month, **more, wd=self.wd[when.weekday()], WD=self.WD[when.weekday()],
            mon=self.mon[when.month - 1], MON=self.MON[when.month - 1], d=when.day, dd=f"{when.day:02}",
            mm=f"{when.month:02}", yy=f"{when.year % 100:02}", yyyy=when.year, H=when.hour,
            HH=f"{when.hour:02}", MM=f"{when.minute:02}", SS=f"{when.second:02}", h=h12,
            ampm=self.ampm[when.hour >= 12],
        )


def _split(words: str) -> tuple[str, ...]:
    return tuple(words.split("|"))


LANGS: dict[str, Lang] = {lang.code: lang for lang in (
    Lang(
        "en", _split("Mon|Tue|Wed|Thu|Fri|Sat|Sun"),
        _split("Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday"),
        _split("Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec"),
        _split("January|February|March|April|May|June|July|August|September|October|November|December"),
        ("AM", "PM"),
        gmail="On {wd}, {mon} {d}, {yyyy} at {h}:{MM} {ampm} {name} <{addr}> wrote:",
        apple="On {mon} {d}, {yyyy}, at {HH}:{MM}, {name} <{addr}> wrote:",
        thunderbird="On {dd}/{mm}/{yyyy} {HH}:{MM}, {name} wrote:",
        outlook=("From", "Sent", "To", "Subject"), outlook_date="{WD}, {MON} {d}, {yyyy} {h}:{MM} {ampm}",
        original_message="-----Original Message-----", iphone="Sent from my iPhone",
        extra={"yahoo": "On {WD}, {MON} {d}, {yyyy} at {HH}:{MM}:{SS} GMT, {name} <{addr}> wrote:",
               "samsung": "Sent from my Galaxy", "outlook_android": "Get Outlook for Android",
               "outlook_ios": "Get Outlook for iOS", "windows": "Sent from Mail for Windows",
               "zoho": "---- On {wd}, {dd} {mon} {yyyy} {HH}:{MM}:{SS} +0000 {name} <{addr}> wrote ----",
               "proton": "On {WD}, {MON} {d}th, {yyyy} at {HH}:{MM}, {name} <{addr}> wrote:",
               "spark": "On {d} {mon} {yyyy} at {HH}:{MM} +0000, {name} <{addr}>, wrote:",
               "evolution": "On {wd}, {yyyy}-{mm}-{dd} at {HH}:{MM} +0000, {name} wrote:",
               "mutt": "On {wd}, {mon} {dd}, {yyyy} at {h:02}:{MM}:{SS}{ampm} +0000, {name} wrote:",
               "becky": "On {wd}, {dd} {mon} {yyyy} {HH}:{MM}:{SS} +0000\n{name} <{addr}> wrote:",
               "fastmail": "On {wd}, {d} {mon} {yyyy}, at {HH}:{MM}, {name} wrote:",
               "yahoo_android": "Sent from Yahoo Mail on Android"},
    ),
    Lang(
        "de", _split("Mo.|Di.|Mi.|Do.|Fr.|Sa.|So."),
        _split("Montag|Dienstag|Mittwoch|Donnerstag|Freitag|Samstag|Sonntag"),
        _split("Jan.|Feb.|März|Apr.|Mai|Juni|Juli|Aug.|Sept.|Okt.|Nov.|Dez."),
        _split("Januar|Februar|März|April|Mai|Juni|Juli|August|September|Oktober|November|Dezember"),
        ("AM", "PM"),
        gmail="Am {wd}, {d}. {mon} {yyyy} um {HH}:{MM} Uhr schrieb {name} <{addr}>:",
        apple="Am {dd}.{mm}.{yyyy} um {HH}:{MM} schrieb {name} <{addr}>:",
        thunderbird="Am {dd}.{mm}.{yy} um {HH}:{MM} schrieb {name}:",
        outlook=("Von", "Gesendet", "An", "Betreff"), outlook_date="{WD}, {d}. {MON} {yyyy} {HH}:{MM}",
        original_message="-----Ursprüngliche Nachricht-----", iphone="Von meinem iPhone gesendet",
        reply_prefix="AW:",
        extra={"k9": "Am {dd}.{mm}.{yyyy} {h}:{MM} nachm. schrieb {name} <{addr}>:",
               "yahoo": "Am {WD}, {d}. {MON} {yyyy}, {HH}:{MM}:{SS} MEZ hat {name} <{addr}> "
                        "Folgendes geschrieben:",
               "roundcube": "Am {yyyy}-{mm}-{dd} {HH}:{MM}, schrieb {name}:",
               "outlook_android": "Outlook für Android herunterladen", "windows": "Gesendet von Mail für Windows",
               "samsung": "Von meinem Samsung Galaxy Smartphone gesendet.",
               "samsung_sep": "-------- Ursprüngliche Nachricht --------",
               "samsung_labels": "Von|Datum|An|Betreff"},
    ),
    Lang(
        "fr", _split("lun.|mar.|mer.|jeu.|ven.|sam.|dim."),
        _split("lundi|mardi|mercredi|jeudi|vendredi|samedi|dimanche"),
        _split("janv.|févr.|mars|avr.|mai|juin|juil.|août|sept.|oct.|nov.|déc."),
        _split("janvier|février|mars|avril|mai|juin|juillet|août|septembre|octobre|novembre|décembre"),
        ("AM", "PM"),
        gmail="Le {wd} {d} {mon} {yyyy} à {HH}:{MM}, {name} <{addr}> a écrit :",
        apple="Le {d} {mon} {yyyy} à {HH}:{MM}, {name} <{addr}> a écrit :",
        thunderbird="Le {dd}/{mm}/{yyyy} à {HH}:{MM}, {name} a écrit :",
        outlook=("De", "Envoyé", "À", "Objet"), outlook_date="{WD} {d} {MON} {yyyy} {HH}:{MM}",
        original_message="-----Message d'origine-----", iphone="Envoyé de mon iPhone",
        extra={"outlook_ios": "Envoyé à partir de Outlook pour iOS",
               "yahoo_android": "Envoyé depuis Yahoo Mail pour Android",
               "zimbra": "- Le {yyyy}-{mm}-{dd} {HH}:{MM}, {name} <{addr}> a écrit :",
               "yahoo": "Le {WD} {d} {MON} {yyyy} à {HH}:{MM}:{SS} UTC+1, {name} <{addr}> a écrit :"},
    ),
    Lang(
        "es", _split("lun|mar|mié|jue|vie|sáb|dom"),
        _split("lunes|martes|miércoles|jueves|viernes|sábado|domingo"),
        _split("ene|feb|mar|abr|may|jun|jul|ago|sept|oct|nov|dic"),
        _split("enero|febrero|marzo|abril|mayo|junio|julio|agosto|septiembre|octubre|noviembre|diciembre"),
        ("a. m.", "p. m."),
        gmail="El {wd}, {d} {mon} {yyyy} a las {HH}:{MM}, {name} (<{addr}>) escribió:",
        apple="El {d} {mon} {yyyy}, a las {HH}:{MM}, {name} <{addr}> escribió:",
        thunderbird="El {dd}/{mm}/{yy} a las {HH}:{MM}, {name} escribió:",
        outlook=("De", "Enviado el", "Para", "Asunto"), outlook_date="{WD}, {d} de {MON} de {yyyy} {HH}:{MM}",
        original_message="-----Mensaje original-----", iphone="Enviado desde mi iPhone", reply_prefix="RE:",
        extra={"samsung": "Enviado desde mi smartphone Samsung Galaxy.",
               "samsung_sep": "-------- Mensaje original --------", "samsung_labels": "De|Fecha|Para|Asunto"},
    ),
    Lang(
        "it", _split("lun|mar|mer|gio|ven|sab|dom"),
        _split("lunedì|martedì|mercoledì|giovedì|venerdì|sabato|domenica"),
        _split("gen|feb|mar|apr|mag|giu|lug|ago|set|ott|nov|dic"),
        _split("gennaio|febbraio|marzo|aprile|maggio|giugno|luglio|agosto|settembre|ottobre|novembre|dicembre"),
        ("AM", "PM"),
        gmail="Il giorno {wd} {d} {mon} {yyyy} alle ore {HH}:{MM} {name} <{addr}> ha scritto:",
        apple="Il giorno {d} {mon} {yyyy}, alle ore {HH}:{MM}, {name} <{addr}> ha scritto:",
        thunderbird="Il {dd}/{mm}/{yy} {HH}:{MM}, {name} ha scritto:",
        outlook=("Da", "Inviato", "A", "Oggetto"), outlook_date="{WD} {d} {MON} {yyyy} {HH}:{MM}",
        original_message="-----Messaggio originale-----", iphone="Inviato da iPhone", reply_prefix="R:",
        extra={"libero": "----Messaggio originale----\nDa: {addr}\nData: {dd}/{mm}/{yyyy} {HH}:{MM}\n"
                         "A: <{to}>\nOgg: {subject}"},
    ),
    Lang(
        "pt", _split("seg.|ter.|qua.|qui.|sex.|sáb.|dom."),
        _split("segunda-feira|terça-feira|quarta-feira|quinta-feira|sexta-feira|sábado|domingo"),
        _split("jan.|fev.|mar.|abr.|mai.|jun.|jul.|ago.|set.|out.|nov.|dez."),
        _split("janeiro|fevereiro|março|abril|maio|junho|julho|agosto|setembro|outubro|novembro|dezembro"),
        ("AM", "PM"),
        gmail="Em {wd}, {d} de {mon} de {yyyy} às {HH}:{MM}, {name} <{addr}> escreveu:",
        apple="Em {d} de {mon} de {yyyy}, à(s) {HH}:{MM}, {name} <{addr}> escreveu:",
        thunderbird="Em {dd}/{mm}/{yyyy} {HH}:{MM}, {name} escreveu:",
        outlook=("De", "Enviada em", "Para", "Assunto"), outlook_date="{WD}, {d} de {MON} de {yyyy} {HH}:{MM}",
        original_message="-----Mensagem original-----", iphone="Enviado do meu iPhone", reply_prefix="RES:",
    ),
    Lang(
        "nl", _split("ma|di|wo|do|vr|za|zo"),
        _split("maandag|dinsdag|woensdag|donderdag|vrijdag|zaterdag|zondag"),
        _split("jan|feb|mrt|apr|mei|jun|jul|aug|sep|okt|nov|dec"),
        _split("januari|februari|maart|april|mei|juni|juli|augustus|september|oktober|november|december"),
        ("a.m.", "p.m."),
        gmail="Op {wd} {d} {mon} {yyyy} om {HH}:{MM} schreef {name} <{addr}>:",
        apple="Op {d} {mon} {yyyy} om {HH}:{MM} heeft {name} <{addr}> het volgende geschreven:",
        thunderbird="Op {dd}-{mm}-{yyyy} om {HH}:{MM} schreef {name}:",
        outlook=("Van", "Verzonden", "Aan", "Onderwerp"), outlook_date="{WD} {d} {MON} {yyyy} {HH}:{MM}",
        original_message="-----Oorspronkelijk bericht-----", iphone="Verzonden vanaf mijn iPhone",
    ),
    Lang(
        "sv", _split("mån|tis|ons|tors|fre|lör|sön"),
        _split("måndag|tisdag|onsdag|torsdag|fredag|lördag|söndag"),
        _split("jan.|feb.|mars|apr.|maj|juni|juli|aug.|sep.|okt.|nov.|dec."),
        _split("januari|februari|mars|april|maj|juni|juli|augusti|september|oktober|november|december"),
        ("fm", "em"),
        gmail="Den {wd} {d} {mon} {yyyy} kl {HH}:{MM} skrev {name} <{addr}>:",
        apple="{d} {mon} {yyyy} kl. {HH}:{MM} skrev {name} <{addr}>:",
        thunderbird="Den {yyyy}-{mm}-{dd} kl. {HH}:{MM}, skrev {name}:",
        outlook=("Från", "Skickat", "Till", "Ämne"), outlook_date="den {d} {MON} {yyyy} {HH}:{MM}",
        original_message="-----Ursprungligt meddelande-----", iphone="Skickat från min iPhone",
        reply_prefix="SV:",
    ),
    Lang(
        "no", _split("man.|tir.|ons.|tor.|fre.|lør.|søn."),
        _split("mandag|tirsdag|onsdag|torsdag|fredag|lørdag|søndag"),
        _split("jan.|feb.|mar.|apr.|mai|jun.|jul.|aug.|sep.|okt.|nov.|des."),
        _split("januar|februar|mars|april|mai|juni|juli|august|september|oktober|november|desember"),
        ("a.m.", "p.m."),
        gmail="{wd} {d}. {mon} {yyyy} kl. {HH}:{MM} skrev {name} <{addr}>:",
        apple="{d}. {mon} {yyyy} kl. {HH}:{MM} skrev {name} <{addr}>:",
        thunderbird="Den {dd}.{mm}.{yyyy} {HH}:{MM}, skrev {name}:",
        outlook=("Fra", "Sendt", "Til", "Emne"), outlook_date="{WD} {d}. {MON} {yyyy} {HH}:{MM}",
        original_message="-----Opprinnelig melding-----", iphone="Sendt fra min iPhone", reply_prefix="SV:",
    ),
    Lang(
        "da", _split("man.|tir.|ons.|tor.|fre.|lør.|søn."),
        _split("mandag|tirsdag|onsdag|torsdag|fredag|lørdag|søndag"),
        _split("jan.|feb.|mar.|apr.|maj|jun.|jul.|aug.|sep.|okt.|nov.|dec."),
        _split("januar|februar|marts|april|maj|juni|juli|august|september|oktober|november|december"),
        ("AM", "PM"),
        gmail="Den {wd} {d}. {mon} {yyyy} kl. {H}.{MM} skrev {name} <{addr}>:",
        apple="Den {d}. {mon} {yyyy} kl. {HH}.{MM} skrev {name} <{addr}>:",
        thunderbird="Den {dd}.{mm}.{yyyy} kl. {HH}.{MM} skrev {name}:",
        outlook=("Fra", "Sendt", "Til", "Emne"), outlook_date="{d}. {MON} {yyyy} {HH}:{MM}",
        original_message="-----Oprindelig meddelelse-----", iphone="Sendt fra min iPhone", reply_prefix="SV:",
    ),
    Lang(
        "fi", _split("ma|ti|ke|to|pe|la|su"),
        _split("maanantai|tiistai|keskiviikko|torstai|perjantai|lauantai|sunnuntai"),
        _split("tammik.|helmik.|maalisk.|huhtik.|toukok.|kesäk.|heinäk.|elok.|syysk.|lokak.|marrask.|jouluk."),
        _split("tammikuuta|helmikuuta|maaliskuuta|huhtikuuta|toukokuuta|kesäkuuta|heinäkuuta|elokuuta|"
               "syyskuuta|lokakuuta|marraskuuta|joulukuuta"),
        ("ap.", "ip."),
        gmail="{wd} {d}. {mon} {yyyy} klo {H}.{MM} {name} <{addr}> kirjoitti:",
        apple="{name} <{addr}> kirjoitti {d}.{mm}.{yyyy} kello {H}.{MM}:",
        thunderbird="{d}.{mm}.{yyyy} klo {H}.{MM} {name} kirjoitti:",
        outlook=("Lähettäjä", "Lähetetty", "Vastaanottaja", "Aihe"),
        outlook_date="{WD} {d}. {MON} {yyyy} {H}.{MM}",
        original_message="-----Alkuperäinen viesti-----", iphone="Lähetetty iPhonesta", reply_prefix="VS:",
    ),
    Lang(
        "pl", _split("pon.|wt.|śr.|czw.|pt.|sob.|niedz."),
        _split("poniedziałek|wtorek|środa|czwartek|piątek|sobota|niedziela"),
        _split("sty|lut|mar|kwi|maj|cze|lip|sie|wrz|paź|lis|gru"),
        _split("stycznia|lutego|marca|kwietnia|maja|czerwca|lipca|sierpnia|września|października|"
               "listopada|grudnia"),
        ("AM", "PM"),
        gmail="{wd}, {d} {mon} {yyyy} o {HH}:{MM} {name} <{addr}> napisał(a):",
        apple="Wiadomość napisana przez {name} <{addr}> w dniu {dd}.{mm}.{yyyy}, o godz. {HH}:{MM}:",
        thunderbird="W dniu {dd}.{mm}.{yyyy} o {HH}:{MM}, {name} pisze:",
        outlook=("Od", "Wysłano", "Do", "Temat"), outlook_date="{WD}, {d} {MON} {yyyy} {HH}:{MM}",
        original_message="-----Oryginalna wiadomość-----", iphone="Wysłane z iPhone'a", reply_prefix="Odp:",
        extra={"wp": "Dnia {d} {MON} {yyyy} {HH}:{MM} {name} <{addr}> napisał(a):"},
    ),
    Lang(
        "cs", _split("po|út|st|čt|pá|so|ne"),
        _split("pondělí|úterý|středa|čtvrtek|pátek|sobota|neděle"),
        _split("led|úno|bře|dub|kvě|čvn|čvc|srp|zář|říj|lis|pro"),
        _split("ledna|února|března|dubna|května|června|července|srpna|září|října|listopadu|prosince"),
        ("dop.", "odp."),
        gmail="{wd} {d}. {m}. {yyyy} v {H}:{MM} odesílatel {name} <{addr}> napsal:",
        apple="{d}. {m}. {yyyy} v {H}:{MM}, {name} <{addr}>:",
        thunderbird="Dne {dd}. {mm}. {yy} v {H}:{MM} {name} napsal(a):",
        outlook=("Od", "Odesláno", "Komu", "Předmět"), outlook_date="{WD} {d}. {MON} {yyyy} {H}:{MM}",
        original_message="-----Původní zpráva-----", iphone="Odesláno z iPhonu", reply_prefix="Odp:",
        extra={"seznam_sep": "---------- Původní e-mail ----------", "seznam_labels": "Od|Komu|Datum|Předmět"},
    ),
    Lang(
        "ru", _split("пн|вт|ср|чт|пт|сб|вс"),
        _split("понедельник|вторник|среда|четверг|пятница|суббота|воскресенье"),
        _split("янв.|февр.|мар.|апр.|мая|июн.|июл.|авг.|сент.|окт.|нояб.|дек."),
        _split("января|февраля|марта|апреля|мая|июня|июля|августа|сентября|октября|ноября|декабря"),
        ("AM", "PM"),
        gmail="{wd}, {d} {mon} {yyyy} г. в {HH}:{MM}, {name} <{addr}>:",
        apple="{d} {mon} {yyyy} г., в {HH}:{MM}, {name} <{addr}> написал(а):",
        thunderbird="{dd}.{mm}.{yyyy} {HH}:{MM}, {name} пишет:",
        outlook=("От", "Отправлено", "Кому", "Тема"), outlook_date="{d} {MON} {yyyy} г. {HH}:{MM}",
        original_message="-----Исходное сообщение-----", iphone="Отправлено с iPhone",
        extra={"mailru": "{WD}, {d} {MON} {yyyy}, {HH}:{MM} +03:00 от {name} <{addr}>:",
               "yandex": "{dd}.{mm}.{yyyy}, {HH}:{MM}, \"{name}\" <{addr}>:",
               "thebat_hello": "Здравствуйте, {name}.", "thebat": "Вы писали {d} {MON} {yyyy} г., {HH}:{MM}:{SS}:",
               "thebat_sig": "С уважением,"},
    ),
    Lang(
        "uk", _split("пн|вт|ср|чт|пт|сб|нд"),
        _split("понеділок|вівторок|середа|четвер|пʼятниця|субота|неділя"),
        _split("січ.|лют.|бер.|квіт.|трав.|черв.|лип.|серп.|вер.|жовт.|лист.|груд."),
        _split("січня|лютого|березня|квітня|травня|червня|липня|серпня|вересня|жовтня|листопада|грудня"),
        ("дп", "пп"),
        gmail="{wd}, {d} {mon} {yyyy} р. о {HH}:{MM} {name} <{addr}> пише:",
        apple="{d} {mon} {yyyy} р. о {HH}:{MM} {name} <{addr}> написав(ла):",
        thunderbird="{dd}.{mm}.{yy} {HH}:{MM}, {name} пише:",
        outlook=("Від", "Надіслано", "Кому", "Тема"), outlook_date="{WD}, {d} {MON} {yyyy} р. {HH}:{MM}",
        original_message="-----Оригінальне повідомлення-----", iphone="Надіслано з iPhone",
        extra={"ukrnet": "{d} {MON} {yyyy}, {HH}:{MM}:{SS}, від \"{name}\" <{addr}>:"},
    ),
    Lang(
        "tr", _split("Pzt|Sal|Çar|Per|Cum|Cmt|Paz"),
        _split("Pazartesi|Salı|Çarşamba|Perşembe|Cuma|Cumartesi|Pazar"),
        _split("Oca|Şub|Mar|Nis|May|Haz|Tem|Ağu|Eyl|Eki|Kas|Ara"),
        _split("Ocak|Şubat|Mart|Nisan|Mayıs|Haziran|Temmuz|Ağustos|Eylül|Ekim|Kasım|Aralık"),
        ("ÖÖ", "ÖS"),
        gmail="{name} <{addr}>, {d} {mon} {yyyy} {wd}, {HH}:{MM} tarihinde şunu yazdı:",
        apple="{d} {mon} {yyyy} tarihinde {HH}:{MM} saatinde, {name} <{addr}> şunları yazdı:",
        thunderbird="{dd}.{mm}.{yyyy} {HH}:{MM} tarihinde {name} yazdı:",
        outlook=("Kimden", "Gönderildi", "Kime", "Konu"), outlook_date="{d} {MON} {yyyy} {WD} {HH}:{MM}",
        original_message="-----Özgün İleti-----", iphone="iPhone'umdan gönderildi", reply_prefix="YNT:",
    ),
    Lang(
        "ja", _split("月|火|水|木|金|土|日"), _split("月曜日|火曜日|水曜日|木曜日|金曜日|土曜日|日曜日"),
        _split("1|2|3|4|5|6|7|8|9|10|11|12"), _split("1月|2月|3月|4月|5月|6月|7月|8月|9月|10月|11月|12月"),
        ("午前", "午後"),
        gmail="{yyyy}年{m}月{d}日({wd}) {H}:{MM} {name} <{addr}>:",
        apple="{yyyy}/{mm}/{dd} {H}:{MM}、{name} <{addr}>のメール:",
        thunderbird="{yyyy}/{mm}/{dd} {H}:{MM}, {name} wrote:",
        outlook=("差出人", "送信日時", "宛先", "件名"), outlook_date="{yyyy}年{m}月{d}日 {H}:{MM}",
        original_message="-----Original Message-----", iphone="iPhoneから送信",
    ),
    Lang(
        "zh", _split("周一|周二|周三|周四|周五|周六|周日"),
        _split("星期一|星期二|星期三|星期四|星期五|星期六|星期日"),
        _split("1|2|3|4|5|6|7|8|9|10|11|12"), _split("一月|二月|三月|四月|五月|六月|七月|八月|九月|十月|十一月|十二月"),
        ("上午", "下午"),
        gmail="{name} <{addr}> 于{yyyy}年{m}月{d}日{wd} {HH}:{MM}写道：",
        apple="在 {yyyy}年{m}月{d}日，{HH}:{MM}，{name} <{addr}> 写道：",
        thunderbird="在 {yyyy}/{mm}/{dd} {HH}:{MM}, {name} 写道:",
        outlook=("发件人", "发送时间", "收件人", "主题"), outlook_date="{yyyy}年{m}月{d}日 {H}:{MM}",
        original_message="-----邮件原件-----", iphone="发自我的iPhone", reply_prefix="答复:",
        extra={"tw_iphone": "從我的 iPhone 傳送", "tw_outlook": "寄件者|寄件日期|收件者|主旨",
               "foxmail_sep": "------------------ 原始邮件 ------------------",
               "foxmail_labels": "发件人|发送时间|收件人|主题",
               "foxmail_date": "{yyyy}年{m}月{d}日({WD}) {ampm}{h}:{MM}",
               "netease": "在 {yyyy}-{mm}-{dd} {HH}:{MM}:{SS}，\"{name}\" <{addr}> 写道："},
    ),
    Lang(
        "zh-tw", _split("週一|週二|週三|週四|週五|週六|週日"),
        _split("星期一|星期二|星期三|星期四|星期五|星期六|星期日"),
        _split("1|2|3|4|5|6|7|8|9|10|11|12"), _split("一月|二月|三月|四月|五月|六月|七月|八月|九月|十月|十一月|十二月"),
        ("上午", "下午"),
        gmail="{name} <{addr}> 於 {yyyy}年{m}月{d}日 {wd} {ampm}{h}:{MM}寫道：",
        apple="{name} <{addr}> 於 {yyyy}年{m}月{d}日 {ampm}{h}:{MM} 寫道：",
        thunderbird="於 {yyyy}/{m}/{d} {ampm} {h}:{MM}, {name} 寫道:",
        outlook=("寄件者", "寄件日期", "收件者", "主旨"), outlook_date="{yyyy}年{m}月{d}日 {WD} {ampm} {h}:{MM}",
        original_message="-----原始郵件-----", iphone="從我的 iPhone 傳送", reply_prefix="回覆:",
    ),
    Lang(
        "ko", _split("월|화|수|목|금|토|일"), _split("월요일|화요일|수요일|목요일|금요일|토요일|일요일"),
        _split("1|2|3|4|5|6|7|8|9|10|11|12"), _split("1월|2월|3월|4월|5월|6월|7월|8월|9월|10월|11월|12월"),
        ("오전", "오후"),
        gmail="{yyyy}년 {m}월 {d}일 ({wd}) {ampm} {h}:{MM}, {name} <{addr}>님이 작성:",
        apple="{yyyy}. {m}. {d}. {ampm} {h}:{MM}, {name} <{addr}> 작성:",
        thunderbird="{yyyy}-{mm}-{dd} {ampm} {h}:{MM}에 {name} 이(가) 쓴 글:",
        outlook=("보낸 사람", "보낸 날짜", "받는 사람", "제목"),
        outlook_date="{yyyy}년 {m}월 {d}일 {WD} {ampm} {h}:{MM}",
        original_message="-----Original Message-----", iphone="iPhone에서 보냄", reply_prefix="회신:",
        extra={"naver": "-----Original Message-----\nFrom: \"{name}\"<{addr}>\nTo: <{to}>;\nCc: \n"
                        "Sent: {yyyy}-{mm}-{dd} ({wd}) {HH}:{MM}:{SS} (GMT+09:00)\nSubject: {subject}"},
    ),
)}
