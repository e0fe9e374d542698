"""The word tables of the lexical checker (:mod:`perplexed.grounding._lexical`): stop words, negations, synonyms,
antonyms (each in all its forms), quantifiers and modals, comparison directions, units, months and number
words. Data only: no logic beyond building the lookups.
"""

from __future__ import annotations

__all__ = [
    "ANTONYMS",
    "COMPARATIVES",
    "CURRENCY",
    "DIRECTIONS",
    "DIRECTION_AFTER",
    "MODALS",
    "MONTHS",
    "NAME_ENDINGS",
    "NEGATING_PREFIXES",
    "NEGATIONS",
    "NOT_NEGATED",
    "OPPOSITES",
    "PERCENT_WORDS",
    "SCALES",
    "SHOWN",
    "STARTERS",
    "STOP",
    "SYNONYMS",
    "UNITS",
    "WORD_NUMBERS",
]

STOP = frozenset(
    """a about above after again against all also am an and any are as at be because been before being below
    between both but by can could did do does doing down during each few for from further had has have having
    he her here hers herself him himself his how i if in into is it its itself just me more most my myself
    now of off on once only or other our ours ourselves out over own same she should so some such than that the
    their theirs them themselves then there these they this those through to too under until up very was we
    were what when where which while who whom why will with would you your yours yourself yourselves may might
    must shall per via upon within whose whether yet around across along among including according
    many much several however thus therefore although though since onto toward towards
    one ones s t d ll m re ve
    often usually typically generally commonly sometimes frequently normally""".split()
)
# common capitalised sentence starters that are not names
STARTERS = frozenset(
    """researchers scientists officials experts studies critics users residents students patients visitors
    engineers workers farmers customers analysts authorities regulators investors companies governments doctors
    teachers parents children adults people scholars historians according under despite unlike like every
    today currently overall together instead additionally moreover furthermore meanwhile later earlier
    eventually initially originally recently previously finally first second third new older large small total
    average typical most several many some another both each either yes early late modern local national
    federal state public private global recent large larger smaller larger largest smallest major minor key
    common rare different similar members owners voters leaders""".split()
)
NEGATIONS = frozenset(
    "not no never none neither nor nobody nothing nowhere without cannot cant dont doesnt didnt isnt arent "
    "wasnt werent wont wouldnt shouldnt couldnt hasnt havent hadnt rather non".split()
)
# canonical forms: a claim word and its passage paraphrase count as the same word
SYNONYMS: dict[str, str] = {}
for _group in (
    "buy buys bought buying purchase purchases purchased purchasing acquire acquires acquired acquiring",
    "big large huge",
    "small little tiny",
    "start starts started starting begin begins began begun beginning commence commenced launch launched launches",
    "end ends ended ending finish finished conclude concluded",
    "use uses used using utilize utilizes utilized employ employs employed",
    "show shows showed shown demonstrate demonstrates demonstrated reveal reveals revealed indicate indicates indicated",
    "make makes made produce produces produced manufacture manufactures manufactured",
    "rise rises rose risen grow grows grew grown increase increases increased climb climbed",
    "fall falls fell fallen decline declines declined decrease decreases decreased drop drops dropped",
    "help helps helped aid aids aided assist assists assisted",
    "need needs needed require requires required",
    "allow allows allowed permit permits permitted let lets",
    "build builds built construct constructs constructed",
    "say says said state states stated report reports reported",
    "car cars automobile automobiles vehicle vehicles",
    "company companies firm firms",
    "roughly about approximately nearly almost around some",
    "people persons individuals",
    "kid kids child children",
    "doctor doctors physician physicians",
    "rule rules regulation regulations",
    "law laws statute statutes",
    "scientist scientists researcher researchers",
    "study studies research",
    "city cities town towns",
    "fast quick rapid rapidly quickly",
    "create creates created establish establishes established found founded founding form formed",
    "die dies died death",
    "win wins won winning",
    "cut cuts reduce reduces reduced lower lowered",
    "get gets got obtain obtains obtained receive receives received",
    "main primary principal",
    "major significant",
    "ban bans banned prohibit prohibits prohibited forbid forbids forbidden",
    "yearly annual annually",
    "cost costs price prices",
    "world global worldwide",
    "home house homes houses",
    "job jobs employment",
    "earn earns earned make",
    "lead leads led head heads headed",
    "own owns owned",
    "kill kills killed",
    "hire hires hired recruit recruits recruited",
    "area region",
    "approve approves approved pass passes passed",
    "open opens opened opening",
    "hold holds held host hosts hosted",
):
    _words = _group.split()
    for _w in _words:
        SYNONYMS.setdefault(_w, _words[0])
ANTONYMS = {
    "rise": "fall",
    "fall": "rise",
    "before": "after",
    "after": "before",
    "more": "less",
    "less": "more",
    "higher": "lower",
    "lower": "higher",
    "above": "below",
    "below": "above",
    "larger": "smaller",
    "smaller": "larger",
    "first": "last",
    "last": "first",
    "gain": "loss",
    "loss": "gain",
    "win": "lose",
    "lose": "win",
    "approve": "reject",
    "reject": "approve",
    "open": "close",
    "close": "open",
    "north": "south",
    "south": "north",
    "east": "west",
    "west": "east",
    "minimum": "maximum",
    "maximum": "minimum",
    "earliest": "latest",
    "latest": "earliest",
    "oldest": "newest",
    "newest": "oldest",
}
# "more"/"less" weigh nothing (they are everywhere) but contradict each other
COMPARATIVES = {"more": "~more", "less": "~less", "fewer": "~less"}
ANTONYMS.update({"~more": "~less", "~less": "~more"})
MONTHS = {
    m: i
    for i, names in enumerate(
        (
            "january jan",
            "february feb",
            "march mar",
            "april apr",
            "may",
            "june jun",
            "july jul",
            "august aug",
            "september sep sept",
            "october oct",
            "november nov",
            "december dec",
        ),
        start=1,
    )
    for m in names.split()
}
WORD_NUMBERS: dict[str, float] = {
    w: n
    for n, w in enumerate(
        "zero _ two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
        "seventeen eighteen nineteen twenty".split()
    )
    if w != "_"
}
WORD_NUMBERS.update(
    {"thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90}
)
WORD_NUMBERS.update({"dozen": 12, "hundred": 100, "thousand": 1000, "twice": 2, "half": 0.5})
SCALES = {"hundred": 1e2, "thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12, "bn": 1e9}
PERCENT_WORDS = frozenset({"percent", "per cent", "percentage"})
CURRENCY = "$€£¥"

# --- antonyms in all their forms --------------------------------------------------------------------------
# Each side is a group of forms (it is also a synonym group, so every form has one key); a form on one side is
# the opposite of every form on the other.
_OPPOSITES = (
    ("win wins won winning", "lose loses lost losing"),
    ("open opens opened opening", "close closes closed closing shut shuts"),
    ("confirm confirms confirmed confirming", "deny denies denied denying"),
    (
        "enact enacts enacted enacting",
        "repeal repeals repealed repealing abolish abolishes abolished revoke revoked",
    ),
    ("accept accepts accepted accepting", "reject rejects rejected rejecting refuse refuses refused"),
    ("approve approves approved", "reject rejects rejected rejecting"),
    (
        "allow allows allowed permit permits permitted",
        "ban bans banned prohibit prohibits prohibited forbid forbids forbidden",
    ),
    ("include includes included including", "exclude excludes excluded excluding"),
    ("succeed succeeds succeeded success successful", "fail fails failed failure"),
    ("buy buys bought buying purchase purchases purchased", "sell sells sold selling"),
    ("import imports imported", "export exports exported"),
    ("support supports supported", "oppose opposes opposed"),
    ("true", "false"),
    ("public", "private"),
    ("guilty", "innocent"),
    ("alive", "dead"),
    ("positive", "negative"),
    ("majority", "minority"),
    ("profit profits", "loss losses"),
    ("gain gains", "loss losses"),
    ("cheap cheaper", "expensive"),
    ("rural", "urban"),
    ("domestic", "foreign"),
    ("male", "female"),
)
for _a, _b in _OPPOSITES:
    for _side in (_a, _b):
        _forms = _side.split()
        for _w in _forms:
            SYNONYMS.setdefault(_w, SYNONYMS.get(_forms[0], _forms[0]))

#: Quantifiers and modals: weightless keys (like ``more``/``less``) whose opposites contradict a sentence.
#: ``some`` right before a number means "about" and is dropped there.
MODALS = {
    "all": "~all", "every": "~all",
    "some": "~some",
    "may": "~may", "might": "~may", "can": "~may", "could": "~may", "optional": "~may",
    "must": "~must", "shall": "~must", "mandatory": "~must",
}  # fmt: skip
#: A comparison's direction, when the word stands right before a number (``under 35 feet``, ``at least 18``):
#: ``at least``/``at most``/``up to`` are read from their two words.
DIRECTIONS = {
    "under": "~less", "below": "~less", "most": "~less", "to": "~less", "within": "~less",
    "over": "~more", "above": "~more", "least": "~more", "exceeding": "~more", "beyond": "~more",
}  # fmt: skip
#: Of DIRECTIONS, the words that count only after the word given (``at least``, ``at most``, ``up to``).
DIRECTION_AFTER = {"most": "at", "least": "at", "to": "up"}

#: Negating prefixes: ``illegal`` is the opposite of ``legal``, ``unsafe`` of ``safe``, ``disapproved`` of
#: ``approved``, ``nonprofit`` of ``profit`` (a base of at least four letters, not one of NOT_NEGATED).
#: Each prefix with the first letters it goes with ("" for any: ``in`` goes with all but l, m, p and r).
NEGATING_PREFIXES = {"non": "", "dis": "", "un": "", "in": "abcdefghijknoqstuvwxyz", "im": "mp", "il": "l", "ir": "r"}
#: Endings that make a name's adjective or people (``Canada``/``Canadian``, ``Austria``/``Austrian``).
NAME_ENDINGS = ("n", "an", "ian", "ean", "ese", "ish", "i", "ic")
#: How the weightless keys read in a reason.
SHOWN = {"~more": "more/over/at least", "~less": "less/under/at most", "~all": "all", "~some": "some",
         "~may": "may", "~must": "must"}  # fmt: skip
NOT_NEGATED = frozenset(
    """form forms formed formation vest sight side sist stall stant stead sure tend tended tent vent vite voice
    ply plant port ports ported pose posed press pressed prove proved pact rate cover covered count counted
    play played patch miss ease solve tance pute cuss trict aster jury dex terest volve stance crease clude ject
    struct grate mate sult ternal dustry flation tegrate novate vade troduce habit deed spect verse ion iversity
    ique ited less dertake come comes coming take takes took close closed closes closing charge tribute tense
    tern pair part print grain road sect tact band place""".split()
)

#: Units, by the word that follows a number: (the unit's key, its dimension). Two different units of one
#: dimension on one value are a contradiction (``300 meters`` against ``300 feet``).
UNITS: dict[str, tuple[str, str]] = {}
for _canonical, _dimension, _unit_forms in (
    ("ft", "length", "ft foot feet"),
    ("meter", "length", "m meter meters metre metres"),
    ("km", "length", "km kilometer kilometers kilometre kilometres"),
    ("cm", "length", "cm centimeter centimeters centimetre centimetres"),
    ("mm", "length", "mm millimeter millimeters millimetre millimetres"),
    ("mile", "length", "mi mile miles"),
    ("inch", "length", "inch inches"),
    ("kg", "mass", "kg kilogram kilograms kilo kilos"),
    ("gram", "mass", "g gram grams"),
    ("lb", "mass", "lb lbs"),
    ("tonne", "mass", "t ton tons tonne tonnes"),
    ("celsius", "temperature", "c celsius"),
    ("fahrenheit", "temperature", "f fahrenheit"),
    ("acre", "area", "acre acres"),
    ("hectare", "area", "ha hectare hectares"),
    ("liter", "volume", "l liter liters litre litres"),
    ("gallon", "volume", "gal gallon gallons"),
    ("second", "time", "second seconds sec secs"),
    ("minute", "time", "minute minutes min mins"),
    ("hour", "time", "hour hours hr hrs"),
    ("day", "time", "day days"),
    ("week", "time", "week weeks"),
    ("month", "time", "month months"),
    ("year", "time", "year years yr yrs"),
    ("mph", "speed", "mph"),
    ("kmh", "speed", "kmh kph"),
):
    for _w in _unit_forms.split():
        UNITS[_w] = (_canonical, _dimension)
    for _w in _unit_forms.split():
        if len(_w) > 1 and _w not in STOP:  # a unit's words are one key ("ft", "feet"); single letters: none
            SYNONYMS.setdefault(_w, _canonical)


#: Every word's opposites, by the word and by its key: the pairs above, the quantifiers and modals, in all forms.
OPPOSITES: dict[str, frozenset[str]] = {}


def _add_opposites() -> None:
    pairs: dict[str, set[str]] = {}
    for word, other in ANTONYMS.items():
        pairs.setdefault(word, set()).add(other)
    for a, b in _OPPOSITES:
        for side, other_side in ((a, b), (b, a)):
            for word in side.split():
                pairs.setdefault(word, set()).add(other_side.split()[0])
    for a, b in (("~all", "~some"), ("~may", "~must"), ("~more", "~less")):
        pairs.setdefault(a, set()).add(b)
        pairs.setdefault(b, set()).add(a)
    for word, others in pairs.items():
        OPPOSITES[word] = frozenset(others)
        key = SYNONYMS.get(word)
        if key is not None:
            OPPOSITES[key] = OPPOSITES.get(key, frozenset()) | others


_add_opposites()
