#!/usr/bin/env python3
"""gen-tokenizer-corpus.py — writes tests/data/tokenizer/corpus.jsonl, the texts
inferno's tokenizer is checked on against Hugging Face tokenizers (one JSON
string per line). Deterministic: the random parts use a fixed seed, so running
it again reproduces the file byte for byte.

What it holds: prose in many languages and scripts, source code, emoji (ZWJ
sequences, skin tones, flags, keycaps), combining marks and non-NFC input,
every kind of whitespace run, digits and long numbers, contractions in all
letter cases, added/special tokens inside text (whole, partial, nested),
inputs of 10,000+ characters, and seeded random Unicode strings.

Usage: python3 scripts/gen-tokenizer-corpus.py > tests/data/tokenizer/corpus.jsonl
(then scripts/gen-tokenizer-goldens.sh regenerates the expected ids).
"""
import json
import random
import sys
import unicodedata

PROSE = {
    'en': "The quick brown fox jumps over the lazy dog. It's a sunny day, isn't it? "
          "We'll see what they've done; I'd rather not say. Dr. Smith paid $1,234.56 on 2024-03-15 at 10:30am. "
          "\"Quotes,\" (parentheses) [brackets] {braces} — em dash – en dash… ellipsis.",
    'de': "Der schnelle braune Fuchs springt über den faulen Hund. Größenwahn ist keine Lösung. "
          "Die Straße heißt „Am Müllerbach“; die Hausnummer ist 17b. Übermorgen fährt Jürgen nach Österreich.",
    'fr': "Le cœur a ses raisons que la raison ne connaît point. L'été dernier, j'ai visité l'île d'Oléron. "
          "« Où est la bibliothèque ? » demanda-t-elle. Ça coûte 12,50 € — c'est très cher !",
    'es': "¿Dónde está la biblioteca? ¡Qué día tan bonito! El niño comió piña y jalapeños en la montaña. "
          "Mañana será otro día; según él, 3,5 millones de personas asistieron.",
    'it': "Nel mezzo del cammin di nostra vita mi ritrovai per una selva oscura. Perché l'università è chiusa? "
          "È già tardi, però c'è ancora tempo.",
    'pt': "Não sei se ele já chegou à estação. A ação foi rápida e eficaz; o coração bate forte. "
          "Vovó disse: \"Você está atrasado!\"",
    'nl': "Het is een mooie dag in Amsterdam. Wij fietsen langs de grachten en drinken koffie bij de bakker.",
    'pl': "Zażółć gęślą jaźń. Chrząszcz brzmi w trzcinie w Szczebrzeszynie. Łódź jest dużym miastem.",
    'cs': "Příliš žluťoučký kůň úpěl ďábelské ódy. Věděl jsem, že přijdeš.",
    'tr': "Pijamalı hasta yağız şoföre çabucak güvendi. İstanbul'da ılık bir akşam; ağaçlar çiçek açmış.",
    'ru': "Съешь же ещё этих мягких французских булок, да выпей чаю. В чащах юга жил бы цитрус? "
          "Да, но фальшивый экземпляр! Москва — столица России; население около 13 млн человек.",
    'uk': "Чуєш їх, доцю, га? Кумедна ж ти, прощайся без ґольфів! Київ — столиця України.",
    'el': "Ξεσκεπάζω την ψυχοφθόρα βδελυγμία. Η γλώσσα μου έδωσαν ελληνική· το σπίτι φτωχικό στις αμμουδιές του Ομήρου.",
    'zh': "我能吞下玻璃而不伤身体。今天天气很好，我们去公园散步吧！人工智能正在改变世界，"
          "机器学习模型需要大量的数据进行训练。北京是中华人民共和国的首都。",
    'zh_tw': "我能吞下玻璃而不傷身體。臺灣的夜市非常熱鬧，小吃種類繁多。",
    'ja': "私はガラスを食べられます。それは私を傷つけません。東京タワーは高さ333メートルです。"
          "ひらがなとカタカナと漢字を混ぜて書きます。ｶﾀｶﾅ（半角）もあります。",
    'ko': "나는 유리를 먹을 수 있어요. 그래도 아프지 않아요. 서울특별시는 대한민국의 수도입니다. "
          "한국어 문장에는 띄어쓰기가 있습니다.",
    'ar': "أنا قادر على أكل الزجاج و هذا لا يؤلمني. اللغة العربية جميلة جداً، ويتحدث بها أكثر من ٤٠٠ مليون شخص.",
    'he': "אני יכול לאכול זכוכית וזה לא מזיק לי. ירושלים היא עיר עתיקה מאוד.",
    'fa': "من می توانم بدونِ احساس درد شیشه بخورم. تهران پایتخت ایران است.",
    'hi': "मैं काँच खा सकता हूँ और मुझे उससे कोई चोट नहीं पहुंचती। भारत एक विशाल देश है जिसमें अनेक भाषाएँ बोली जाती हैं। ०१२३४५६७८९",
    'bn': "আমি কাঁচ খেতে পারি, তাতে আমার কোনো ক্ষতি হয় না। ঢাকা বাংলাদেশের রাজধানী।",
    'ta': "நான் கண்ணாடி சாப்பிடுவேன், அதனால் எனக்கு ஒரு கேடும் வராது. சென்னை ஒரு பெரிய நகரம்.",
    'th': "ฉันกินกระจกได้ แต่มันไม่ทำให้ฉันเจ็บ กรุงเทพมหานครเป็นเมืองหลวงของประเทศไทย ภาษาไทยไม่มีการเว้นวรรคระหว่างคำ",
    'vi': "Tôi có thể ăn thủy tinh mà không hại gì. Tiếng Việt có nhiều dấu thanh: à, á, ả, ã, ạ. Hà Nội là thủ đô của Việt Nam.",
    'ka': "მინას ვჭამ და არა მტკივა. თბილისი საქართველოს დედაქალაქია.",
    'hy': "Կրնամ ապակի ուտել և ինծի անհանգիստ չըներ։ Երևանը Հայաստանի մայրաքաղաքն է։",
    'am': "ብርጭቆ መብላት እችላለሁ፣ አይጎዳኝም። አዲስ አበባ የኢትዮጵያ ዋና ከተማ ናት።",
    'sw': "Naweza kula bilauri na sikunyui. Nairobi ni mji mkuu wa Kenya.",
    'my': "ကျွန်တော် ကိုယ်ကို မနာဘဲ ဖန်စားနိုင်တယ်။",
    'km': "ខ្ញុំអាចញុំកញ្ចក់បាន ដោយគ្មានបញ្ហា។",
    'si': "මට වීදුරු කෑමට හැකියි. එයින් මට කිසි හානියක් සිදු නොවේ.",
    'mixed': "English, 中文, русский, العربية, हिन्दी and 日本語 in one sentence: naïve café résumé coöperate.",
}

CODE = [
    '#include <stdio.h>\n\nint main(int argc, char **argv) {\n    for (int i = 0; i < argc; i++) {\n'
    '        printf("%d: %s\\n", i, argv[i]);\n    }\n    return 0;\n}\n',
    'static inline uint32_t rotl(uint32_t x, int k) { return (x << k) | (x >> (32 - k)); }\n'
    '/* a comment with tabs\t\tand trailing spaces   */\n#define MAX(a, b) ((a) > (b) ? (a) : (b))\n',
    'def fibonacci(n: int) -> list[int]:\n    """Return the first n Fibonacci numbers."""\n    a, b = 0, 1\n'
    '    out = []\n    for _ in range(n):\n        out.append(a)\n        a, b = b, a + b\n    return out\n\n\n'
    'if __name__ == "__main__":\n    print(fibonacci(10))  # [0, 1, 1, 2, 3, 5, 8, 13, 21, 34]\n',
    'class Foo(Base):\n\tdef __init__(self, x=1e-6, y=0x1F):\n\t\tself.x = x\n\t\tself.y = y  # tab-indented\n',
    "const greet = (name) => `Hello, ${name}!`;\nconsole.log(greet('world'));\n"
    "async function load(url) {\n  const res = await fetch(url, { method: 'GET' });\n  return res.json();\n}\n",
    '{"name": "inferno", "version": "0.1.0", "tokens": [151643, 151644, 151645], "nested": {"a": null, "b": true, '
    '"c": -1.5e+10}, "unicode": "\\u00e9\\ud83d\\ude00"}',
    '#!/bin/sh\nset -eu\nfor f in *.txt; do\n  wc -l "$f" | awk \'{print $1}\' >> counts.log 2>&1\ndone\n'
    'echo "done: $(date +%Y-%m-%d)" && exit 0\n',
    'fn main() {\n    let v: Vec<u8> = (0..10).map(|x| x * 2).collect();\n    println!("{:?}", v);\n}\n',
    '<!DOCTYPE html>\n<html lang="en">\n<head><meta charset="utf-8"><title>Test &amp; page</title></head>\n'
    '<body><p class="x">Hello&nbsp;world</p><!-- comment --></body>\n</html>\n',
    "SELECT u.id, COUNT(*) AS n FROM users u JOIN orders o ON o.user_id = u.id WHERE o.total > 100.00 "
    "GROUP BY u.id HAVING n >= 3 ORDER BY n DESC LIMIT 10;",
    '# Title\n\n## Subtitle\n\n- item one\n- item **two**\n  - nested `code`\n\n```python\nprint("hi")\n```\n\n'
    '| a | b |\n|---|---|\n| 1 | 2 |\n',
    'key: value\nlist:\n  - a\n  - b: [1, 2, 3]\nmultiline: |\n  line one\n  line two\n',
    '--- a/file.c\n+++ b/file.c\n@@ -1,3 +1,4 @@\n int x;\n-int y;\n+int y = 0;\n+int z;\n',
    'x = [i**2 for i in range(100) if i % 3 == 0]\ny = {k: v for k, v in zip("abc", [1,2,3])}\n'
    'z = lambda *args, **kw: (args, kw)\nassert x[0] == 0 and y["a"] == 1, "oops"\n',
    'if (a != b && c <= d || !e) { x += 1; y -= 2; z *= 3; w /= 4; v %= 5; u <<= 1; t >>= 2; s ^= ~r; }',
    'regex = r"^(?P<user>[\\w.+-]+)@(?P<host>[\\w-]+\\.[\\w.-]+)$"\npath = "C:\\\\Users\\\\me\\\\file.txt"\n',
    'printf("%5.2f%%\\n", 99.5);\nchar *s = "line1\\r\\nline2\\ttab\\0nul";\n',
    '    \n\t\n  \t  \nindented after blank lines\n\n\n\n    deeply\n        nested\n            code\n',
]

EMOJI = [
    "👨‍👩‍👧‍👦 family", "👩🏽‍💻 technologist", "🏳️‍🌈 rainbow flag", "🏴‍☠️ pirate", "👍🏻👍🏼👍🏽👍🏾👍🏿",
    "🇺🇸🇬🇧🇯🇵🇩🇪🇫🇷🇨🇳🇰🇷🇮🇳🇧🇷", "1️⃣ 2️⃣ #️⃣ *️⃣", "❤️ ❤ ♥️ ☺️ ✌🏿", "🧑‍🤝‍🧑 🫱🏼‍🫲🏿",
    "I love 🍕 and 🍣!!! 😂😂😂", "😀😃😄😁😆😅🤣🥲☺️😊😇🙂🙃😉😌😍🥰😘", "🏴󠁧󠁢󠁳󠁣󠁴󠁿 Scotland",
    "🤷‍♀️🤷‍♂️🙇🏻‍♀️", "emoji🙂inside🙂words", "👁️‍🗨️ 🐻‍❄️ ❤️‍🔥 🧔🏻‍♂️",
    "🫠🫡🫢🫣🫤🥹 newer emoji", "🪿🫎🪼🫏 Unicode 15", "🙂\u200d🙂 stray ZWJ", "\U0001F1E6 lone regional indicator",
]

COMBINING = [
    "e\u0301", "cafe\u0301 vs caf\u00e9", "A\u030a vs \u00c5 vs \u212b", "\u212b\u212b\u212b",
    "o\u0308\u0304 ȫ", "\u1100\u1161\u11a8 jamo 각", "\u1112\u1161\u11ab\u1100\u1173\u11af 한글 decomposed",
    "\u1100\u1100\u1161 doubled L", "\uac00\u11a8 LV+T", "\u1161\u11a8 orphan V T",
    "Vie\u0323\u0302t Nam (decomposed)", "a\u0316\u0301 vs a\u0301\u0316 reordering", "q\u0307\u0323 dot order",
    "Z\u0351\u036b\u0343\u036a\u0302\u036b\u033d\u034f\u0334\u0319\u0324\u031e\u0349\u035a\u032f\u031e\u0320\u034dA\u0336\u0317\u0330\u0333L\u0334\u0359\u0332G\u0337O zalgo",
    ">\u0338 not greater", "<|im_end|>\u0338 after a special token", "=\u0338 \u2260", "\u2126 ohm \u03a9 omega",
    "\u0344 dialytika tonos", "\u0958 \u0915\u093c devanagari nukta", "\u0b47\u0b3e oriya", "\u09c7\u09be bengali",
    "\u1b05\u1b35 balinese", "\uff21\uff22\uff23 fullwidth \u2460\u2461 circled \ufb01 ligature",
    "\u00c7\u0327 cedilla twice", "\u0041\u030a\u0301 stacked", "x\u0308 no precomposed",
    "a\u1abf\u0301 Unicode 14 mark", "a\u0301\u1dfa Unicode 10 mark", "a\u08d3\u0316 Unicode 11 mark",
    "e\u0301\u0898\u0316 Unicode 14 mark", "\u0f73 \u0f75 \u0f81 tibetan", "\u1e9b\u0323 long s dot",
    "\u0301 leading combining mark", "\u0301\u0301\u0301", "\u3099\u304b \u304b\u3099 kana voicing",
    "\U0001d15e\U0001d160 musical", "\u2adc forking", "\U00011099\U000110ba kaithi", "\U0001112e\U00011127 chakma",
]

WHITESPACE = [
    " ", "  ", "   ", "\t", "\t\t", "\n", "\n\n", "\n\n\n", "\r\n", "\r\n\r\n", "\r", "\r\r\n\n",
    "a b", "a  b", "a   b", "a \tb", "a\t b", "a \n b", "a\n\nb", "a \n\n b", "a\r\nb", "a \r\n b",
    "trailing   ", "trailing\t", "trailing \n", "   leading", "\n\nleading newlines", "x \u00a0y",
    "NBSP\u00a0\u00a0between", "thin\u2009space", "ideographic\u3000space\u3000\u3000", "zero\u200bwidth\u200b\u200b",
    "em\u2003space en\u2002space", "narrow\u202fnbsp", "ogham\u1680mark", "line\u2028separator",
    "para\u2029separator", "nel\u0085next", "vt\u000bff\u000c", "mixed \t\u00a0\u3000\n runs",
    "\u00a0leading nbsp", "trailing nbsp\u00a0", "\u3000\u3000\u3000", " \u00a0 \u00a0 ",
    "word \u200b word", "\ufeffBOM at start", "soft\u00adhyphen", "word\u2060joiner",
    "    four spaces then word", "\t\ttwo tabs then word", "spaces before newline    \nnext",
    "a  \n  b", "end with spaces and newline  \n", "\n \n \n", " \n", "\n ", " \r\n ", "x\n\n\n\n\n\ny",
    " ! ", " !!\n\n", "?!\r\n\r\n", "-- \n", ".\n", " .\n\n a",
]

NUMBERS = [
    "0", "7", "42", "123", "1234", "12345", "3.14159", "1,000,000", "1.000.000,00", "-273.15",
    "+1 (555) 123-4567", "2024-01-01T00:00:00Z", "0xDEADBEEF", "1e-10", "6.022e23", "v1.2.3-rc.4",
    "٠١٢٣٤٥٦٧٨٩ arabic-indic", "०१२ devanagari", "〇一二三 chinese", "①②③ Ⅻ ⅷ ½ ¾ ² ³", "１２３ fullwidth",
    "3141592653589793238462643383279502884197169399375105820974944592307816406286208998628034825342117068",
    "room 101, floor 7b, 12th street", "10,000 km/h", "50%", "$5", "€5.00", "¥1000", "£3/4",
]

CONTRACTIONS = [
    "it's", "IT'S", "It'S", "iT's", "don't", "DON'T", "Don'T", "we're", "WE'RE", "We'Re", "wE'rE",
    "they've", "THEY'VE", "They'Ve", "I'm", "I'M", "you'll", "YOU'LL", "You'Ll", "you'lL", "he'd", "HE'D",
    "'s 't 're 've 'm 'll 'd", "'S 'T 'RE 'VE 'M 'LL 'D", "'Re 'Ve 'Ll 'rE 'vE 'lL", "'", "''", "'''", "'s'",
    "'sa", "'tis", "'rex", "'velvet", "'mm", "'lll", "'dd", "x'y", "rock'n'roll", "O'Neill", "'ſ", "'ſt",
    "’s curly", "it’s curly", "‘quoted’", "'\u212a kelvin", "'1", "' s", "'\ns", "don''t", "ma'am",
]

SPECIAL = [
    "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>", "<tool_call>", "</tool_call>",
    "<tool_response>", "</tool_response>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>",
    "<|repo_name|>", "<|file_sep|>", "<|object_ref_start|>", "<|object_ref_end|>", "<|box_start|>",
    "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>", "<|vision_end|>", "<|vision_pad|>",
    "<|image_pad|>", "<|video_pad|>",
]

SPECIAL_TEXTS = [
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nHello!<|im_end|>\n<|im_start|>assistant\n",
    "<|im_start|>assistant\n<think>\nLet me think about it.\n</think>\n\nThe answer is 42.<|im_end|>",
    "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
    "<tool_response>\n{\"temp\": 21}\n</tool_response>", "text<|endoftext|>more text<|endoftext|>",
    "<|im_sta", "<|im_start", "<|im_start|", "im_start|>", "<|im_end|><|im_end|><|im_end|>", "<<|im_start|>|>",
    "<|<|im_end|>|>", "< |im_start| >", "<|IM_START|>", "<|im_start|>\u0301", "a<think>b</think>c",
    "<think></think>", "</think><think>", "<thinking>", "<think", "think>", "<|endoftext|", "|endoftext|>",
    " <|im_start|> spaced ", "\n<|im_end|>\n", "<|fim_prefix|>def f():\n<|fim_suffix|>\n<|fim_middle|>",
    "<|repo_name|>inferno\n<|file_sep|>src/main.c\nint main;", "<|vision_start|><|image_pad|><|image_pad|><|vision_end|>",
    "<|endoftext|><|im_start|>", "x<|endoftext|>", "<|endoftext|>x", "<|box_start|>(1,2),(3,4)<|box_end|>",
]


def fuzz_string(rng, length):
    """Random code points drawn from a mix of ranges that stress the classes,
    NFC and the byte-level alphabet."""
    pools = [
        (0x20, 0x7E), (0x00, 0x1F), (0x7F, 0xFF), (0x100, 0x24F), (0x300, 0x36F), (0x370, 0x3FF),
        (0x400, 0x4FF), (0x590, 0x5FF), (0x600, 0x6FF), (0x900, 0x97F), (0xE00, 0xE7F), (0x1100, 0x11FF),
        (0x1AB0, 0x1AFF), (0x1DC0, 0x1DFF), (0x2000, 0x206F), (0x20D0, 0x20FF), (0x2100, 0x218F),
        (0x3000, 0x303F), (0x3040, 0x30FF), (0x4E00, 0x9FFF), (0xAC00, 0xD7A3), (0xE000, 0xF8FF),
        (0xFB00, 0xFB4F), (0xFE00, 0xFE0F), (0xFF00, 0xFFEF), (0xFFF0, 0xFFFF), (0x10000, 0x1007F),
        (0x10D40, 0x10D8F), (0x105C0, 0x105FF), (0x11000, 0x1107F), (0x1D400, 0x1D7FF), (0x1F300, 0x1FAFF),
        (0x1F1E6, 0x1F1FF), (0x20000, 0x2A6DF), (0xE0000, 0xE007F), (0xF0000, 0xF00FF), (0x10FF00, 0x10FFFF),
        (0x08D3, 0x08FF), (0x0D00, 0x0D7F),
    ]
    specials = [" ", "  ", "\n", "\r\n", "\t", "'", "'s", "'LL", "\u00a0", "\u3000", "\u200b", "<|im_end|>",
                "<think>", "0", "9", "\u0301", "\u200d", "\ufe0f"]
    out = []
    while len(out) < length:
        r = rng.random()
        if r < 0.15:
            out.append(rng.choice(specials))
        else:
            lo, hi = rng.choice(pools)
            cp = rng.randint(lo, hi)
            if 0xD800 <= cp <= 0xDFFF:
                continue
            out.append(chr(cp))
    return ''.join(out)


def split_sentences(text):
    parts, cur = [], ''
    for ch in text:
        cur += ch
        if ch in '.!?。！？।።' and len(cur.strip()) > 1:
            parts.append(cur.strip())
            cur = ''
    if cur.strip():
        parts.append(cur.strip())
    return parts


def main():
    rng = random.Random(20240601)
    texts = []

    def add(t):
        texts.append(t)

    add("")
    for lang, para in PROSE.items():
        add(para)
        for s in split_sentences(para):
            add(s)
        add(para.upper())
        add(' ' + para + '\n')
        add(unicodedata.normalize('NFD', para))
    for c in CODE:
        add(c)
        add(c.replace('    ', '\t'))
    for e in EMOJI:
        add(e)
    for c in COMBINING:
        add(c)
        add(c + ' ' + unicodedata.normalize('NFD', c))
    for w in WHITESPACE:
        add(w)
    # whitespace of each kind, in runs of 1..4, between and around words
    for ws in [' ', '\t', '\n', '\r\n', '\u00a0', '\u2009', '\u3000', '\u200b', '\u2028', '\u0085', '\u000b']:
        for k in (1, 2, 3, 4):
            add('word' + ws * k + 'word' + ws * k)
            add(ws * k + '!' + ws * k + '1' + ws * k)
    for n in NUMBERS:
        add(n)
        add('Total: ' + n + ' units.')
    for c in CONTRACTIONS:
        add(c)
        add('I said ' + c + ' twice: ' + c)
    for s in SPECIAL:
        add(s)
        add('before ' + s + ' after')
        add(s + s)
    for s in SPECIAL_TEXTS:
        add(s)
    # every single ASCII character, and a few pairs
    add(''.join(chr(c) for c in range(0, 128)))
    for c in range(0x20, 0x7F):
        add(chr(c) + 'x' + chr(c) + chr(c))
    # long inputs (10,000+ characters)
    all_prose = ' '.join(PROSE.values())
    add((all_prose + '\n') * 3)
    add(''.join(CODE) * 4)
    add('a' * 12000)
    add(' ' * 10001)
    add(' ' * 10000 + 'x')
    add('\n' * 10000)
    add('9' * 10000)
    add('!' * 10000)
    add('😀' * 10000)
    add('的' * 10000)
    add('ab ' * 4000)
    add(('<|im_start|>user\n' + PROSE['en'] + '<|im_end|>\n') * 40)
    add('\u0301' * 10000)
    add('e' + '\u0301\u0316' * 5000)
    add(fuzz_string(rng, 12000))
    add(' '.join(rng.choice(['the', 'of', 'and', 'to', 'in', 'is', 'you', 'that', 'it', 'he', 'was', 'for'])
                 for _ in range(3000)))
    # seeded random Unicode
    for i in range(150):
        add(fuzz_string(rng, rng.randint(1, 80)))
    # random words from the prose, recombined with punctuation and whitespace
    words = all_prose.split()
    for i in range(60):
        n = rng.randint(2, 30)
        seps = [' ', ' ', ' ', '  ', '\n', '\t', ', ', '. ', '\n\n', ' - ', '\u00a0']
        add(''.join(rng.choice(words) + rng.choice(seps) for _ in range(n)))

    for t in texts:
        assert not any(0xD800 <= ord(c) <= 0xDFFF for c in t)
        sys.stdout.write(json.dumps(t, ensure_ascii=False) + '\n')
    print(f'{len(texts)} texts', file=sys.stderr)


if __name__ == '__main__':
    main()
