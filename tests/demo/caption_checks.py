"""What a caption says about a scene, checked against the scene's truth
(issue 24). Used by check_demo_model.py.

- named: every object's colour and shape are named together, the colour word
  right before its shape word ("red circle", "red circles") or right before the
  size word that precedes it ("red small circle"); "small red circle" counts too,
  its colour being right before its shape.
- not there: a colour (red green blue yellow orange purple) or shape (circle
  square triangle star diamond) word for which the scene has no object.
- relations: "<colour> <shape> ... left of|right of|above|over|below|under|
  beneath ... <colour> <shape>" (or "... it", meaning the earlier object), and
  "<colour> <shape> on the left / at the top / in the upper right ..." placements.
- degenerate: a word three or more times in a row (the issue's words), a phrase
  of two or three words three or more times in a row (the same loop, one level
  up: "green square green square green square"), or an empty caption."""
import re

COLOURS = ["red", "green", "blue", "yellow", "orange", "purple"]
SHAPES = ["circle", "square", "triangle", "star", "diamond"]
SIZE_WORDS = {"small", "little", "big", "large"}
# Binary relation phrases: (words, axis, sign). Sign +1: the first object has
# the smaller coordinate (left of / above; image y grows downwards).
RELATIONS = [(("left", "of"), "x", 1), (("right", "of"), "x", -1), (("above",), "y", 1), (("over",), "y", 1),
             (("below",), "y", -1), (("under",), "y", -1), (("beneath",), "y", -1)]
PLACE_WORDS = {"top": ("y", -1), "upper": ("y", -1), "bottom": ("y", 1), "lower": ("y", 1), "left": ("x", -1),
               "right": ("x", 1)}
CLEAR_PX = 15  # on a 128 px image: how far apart a relation must be to be clear
CENTRE_BAND = 0.05  # a placement within 5% of the image's middle line is not judged


def tokens(text):
    return re.sub(r"[^a-z ]", " ", text.lower()).split()


def shape_of(word):
    if word in SHAPES:
        return word
    return word[:-1] if word.endswith("s") and word[:-1] in SHAPES else None


def noun_phrases(words):
    """[(first, last, colour, shape, plural)] for 'colour shape' and 'colour size shape'."""
    found = []
    for i, w in enumerate(words):
        if w not in COLOURS:
            continue
        for j in (i + 1, i + 2):
            if j < len(words) and (j == i + 1 or words[i + 1] in SIZE_WORDS) and shape_of(words[j]):
                found.append((i, j, w, shape_of(words[j]), words[j] != shape_of(words[j])))
                break
    return found


def named_check(words, scene):
    """(every object named, sorted list of colour/shape words not in the scene)."""
    pairs = {(np[2], np[3]) for np in noun_phrases(words)}
    named = all((o["color"], o["shape"]) in pairs for o in scene)
    present = {o["color"] for o in scene} | {o["shape"] for o in scene}
    said = {w for w in words if w in COLOURS} | {shape_of(w) for w in words if shape_of(w)}
    return named, sorted(said - present)


def resolve(np, scene):
    """The one object a singular noun phrase names, else None."""
    if np[4]:
        return None
    matches = [o for o in scene if o["color"] == np[2] and o["shape"] == np[3]]
    return matches[0] if len(matches) == 1 else None


def relation_holds(a, b, axis, sign, clear, alone):
    """a <relation> b: at least `clear` px apart along the axis, in the stated
    direction, and (when the phrase names one axis alone) that axis dominating."""
    other = "y" if axis == "x" else "x"
    d = sign * (b[axis] - a[axis])
    if d < clear:
        return "contradicted" if -d >= clear else "unclear"
    return "right" if not alone or d >= abs(b[other] - a[other]) else "unclear"


def find_relations(words, start, end):
    """Relation phrases in words[start:end] as (axis, sign)."""
    found = []
    for i in range(start, end):
        for phrase, axis, sign in RELATIONS:
            after = words[i + len(phrase):i + len(phrase) + 2]
            # "on the left of the image" places one object; it relates none.
            if tuple(words[i:i + len(phrase)]) == phrase and i + len(phrase) <= end and after != ["the", "image"]:
                found.append((axis, sign))
    return found


def relation_check(words, scene, image_size):
    """Lists of (statement, verdict) for binary relations and for placements."""
    clear = CLEAR_PX * image_size / 128.0
    nps = noun_phrases(words)
    binary, placements = [], []
    for k, np in enumerate(nps):
        a = resolve(np, scene)
        stop = nps[k + 1][0] if k + 1 < len(nps) else len(words)
        # "... A <rel> B": the words between this phrase and the next.
        if k + 1 < len(nps):
            b = resolve(nps[k + 1], scene)
            rels = find_relations(words, np[1] + 1, nps[k + 1][0])
            if a is not None and b is not None and a is not b and rels:
                verdicts = [relation_holds(a, b, ax, s, clear, len(rels) == 1) for ax, s in rels]
                binary.append((" ".join(words[np[0]:nps[k + 1][1] + 1]), worst(verdicts)))
        # "... B <rel> it" after "A and B": B relative to the phrase before it.
        if k > 0 and "it" in words[np[1] + 1:stop]:
            it = words.index("it", np[1] + 1)
            rels = find_relations(words, np[1] + 1, it)
            b = resolve(nps[k - 1], scene)
            if a is not None and b is not None and a is not b and rels:
                verdicts = [relation_holds(a, b, ax, s, clear, len(rels) == 1) for ax, s in rels]
                binary.append((" ".join(words[np[0]:it + 1]), worst(verdicts)))
        if a is not None:
            placement = place_phrase(words, np[1] + 1, stop)
            if placement:
                placements.append((" ".join(words[np[0]:np[1] + 1]) + " " + placement[0],
                                   place_holds(a, placement[1], image_size)))
    return binary, placements


def worst(verdicts):
    for v in ("contradicted", "unclear"):
        if v in verdicts:
            return v
    return "right"


def place_phrase(words, start, stop):
    """'on the left', 'at the top', 'in the upper right corner', 'near the bottom'
    right after a noun phrase; not 'on the left of <something>' (a relation)."""
    if start + 2 >= stop or words[start] not in ("on", "at", "in", "near") or words[start + 1] != "the":
        return None
    i, dirs = start + 2, []
    while i < stop and words[i] in PLACE_WORDS and len(dirs) < 2:
        dirs.append(words[i])
        i += 1
    if not dirs:
        return None
    rest = words[i:i + 3]
    if rest[:1] == ["of"] and rest[1:3] != ["the", "image"]:
        return None
    return " ".join(words[start:i]), dirs


def place_holds(obj, dirs, image_size):
    """'right' when the object is on each named side of the image's middle,
    'wrong' when on the other side, 'unclear' when close to the middle."""
    verdict = "right"
    for word in dirs:
        axis, sign = PLACE_WORDS[word]
        offset = sign * (obj[axis] - image_size / 2.0)
        if abs(offset) < CENTRE_BAND * image_size:
            verdict = "unclear" if verdict == "right" else verdict
        elif offset < 0:
            verdict = "wrong"
    return verdict


def degenerate(words):
    """What makes a caption degenerate, else None: 'empty'; 'word: red' for a word
    three or more times in a row (the issue's test); 'phrase: green square' for a
    phrase of two or three words three or more times in a row, the same loop."""
    if not words:
        return "empty"
    for i in range(len(words) - 2):
        if words[i] == words[i + 1] == words[i + 2]:
            return "word: " + words[i]
    for n in (2, 3):
        for i in range(len(words) - 3 * n + 1):
            if words[i:i + n] == words[i + n:i + 2 * n] == words[i + 2 * n:i + 3 * n]:
                return "phrase: " + " ".join(words[i:i + n])
    return None
