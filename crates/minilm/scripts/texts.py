"""Sample texts for the parity study, the Rust correctness test and the benchmarks.

Deterministic. Hand-written texts plus public eval texts under /work/shared/eval that may
be used as sample text (BANKING77, CLINC150, SciFact; never LoCoMo).
"""
import csv
import json
import os
import random

EVAL = os.environ.get("RUCHE_EVAL", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "..", "shared", "eval"))

COMMANDS = [
    "turn off the lights in the kitchen",
    "set a timer for ten minutes",
    "play some jazz",
    "what's the weather tomorrow in Lyon?",
    "remind me to call mom at 6pm",
    "open the pod bay doors",
    "delete the last three emails from Bob",
    "book a table for two at an Italian place tonight",
    "translate 'good morning' into Japanese",
    "how many calories are in a banana",
    "skip this song",
    "undo",
    "show me my calendar for next week",
    "send a message to the team channel saying the build is green",
    "find all PDF files modified since Monday",
    "restart the staging server",
    "what is 17 times 23",
    "cancel my 3 o'clock meeting",
    "add milk, eggs and flour to the shopping list",
    "summarise this document in five bullet points",
    "list open pull requests assigned to me",
    "convert 100 US dollars to euros",
    "Navigate to the nearest gas station, avoiding tolls.",
    "mute notifications until tomorrow morning",
    "What's the capital of Australia?",
    "git rebase -i HEAD~3",
    "SELECT name, email FROM users WHERE created_at > '2024-01-01';",
    "Export the Q3 sales report as CSV and email it to finance@example.com",
    "yes",
    "STOP!!!",
]

BANKING = [
    "I lost my debit card yesterday, can you block it right away?",
    "Why was I charged a fee for a transfer within the EU?",
    "My salary hasn't shown up in my account yet, it's usually there by the 25th.",
    "How do I change the PIN on my new credit card?",
    "There's a payment to a shop I've never heard of on my statement.",
    "Can I get a refund for a purchase that was charged twice?",
    "What is the exchange rate you use when I pay in Swiss francs?",
    "I'd like to raise my daily ATM withdrawal limit.",
    "Is it possible to open a joint account with my partner online?",
    "The app says my identity verification failed, what documents do you accept?",
]

TOOLS = [
    "get_weather(city: str, date: str) -> Returns the forecast temperature, precipitation and wind for a city on a given date.",
    "Searches the company's internal wiki and returns the ten most relevant pages with their titles and URLs.",
    "Creates a calendar event with a title, start time, end time, location and a list of attendees.",
    "Sends an SMS message to a phone number. Use it only when the user explicitly asks to text someone.",
    "Converts an amount of money from one currency to another using the latest daily exchange rates.",
    "Runs a read-only SQL query against the analytics warehouse and returns at most 1,000 rows as JSON.",
    "Translates text between more than fifty languages, detecting the source language automatically.",
    "Looks up a stock ticker and returns the last traded price, the day's change and the trading volume.",
    "Summarises a long document into a short abstract of a given length in sentences.",
    "Books a ride with a taxi service from a pickup address to a destination, returning the fare estimate.",
    "Fetches the contents of a web page and strips navigation, ads and scripts, leaving the main text.",
    "Adds an item with a quantity to the user's shopping list, creating the list if it does not exist.",
    "Generates an image from a text prompt. Supports sizes 256, 512 and 1024 pixels square.",
    "Checks the status of a parcel from its tracking number across major carriers.",
    "Computes the driving, cycling or walking route between two addresses with turn-by-turn directions.",
    "Reads the user's unread emails and returns sender, subject and a one-line preview for each.",
    "Transcribes an audio file into text with timestamps for every sentence.",
    "Finds recipes that use the given ingredients and fit a dietary restriction such as vegan or gluten-free.",
    "Files a bug report in the issue tracker with a title, description, severity and component.",
    "Returns the definition, pronunciation and example sentences for an English word.",
    "Controls smart-home devices: lights, thermostats, plugs and blinds, by room or by device name.",
    "Queries flight availability between two airports for given dates, cabin class and number of passengers.",
    "Executes a Python snippet in a sandbox with a five-second time limit and returns stdout and stderr.",
    "Lists the files in a cloud storage folder with their sizes and last modification times.",
    "Estimates the nutritional content of a meal described in free text.",
    "Starts, stops or restarts a deployment in the Kubernetes cluster and reports its rollout status.",
    "Searches academic papers by keyword and returns titles, authors, year and abstract.",
    "Schedules a recurring reminder at a given time of day on selected weekdays.",
    "Retrieves the account balance and the last twenty transactions for a bank account.",
    "Plays a song, album or playlist on the user's default music speaker.",
]

PARAGRAPHS = [
    "The engine keeps its index in a single file that is memory-mapped at start-up. Writes go to a "
    "write-ahead log first and are folded into the main file by a background compaction that never "
    "blocks readers. Because every page carries a checksum, a torn write after a power cut is detected "
    "on the next open and the log is replayed from the last good checkpoint.",
    "Our hiking trip started before dawn. We climbed through pine forest for two hours, crossed a "
    "boulder field where the trail markers were hard to see, and reached the ridge just as the fog "
    "lifted. From there the lake below looked like a sheet of hammered silver, and we could see the "
    "village where we had slept, its church tower catching the first light.",
    "To reset your router, unplug it from the power socket, wait at least thirty seconds, and plug it "
    "back in. If the status light keeps blinking orange after five minutes, press and hold the reset "
    "button on the back with a paper clip for ten seconds. This restores factory settings, so you will "
    "need to enter your Wi-Fi name and password again using the setup app.",
    "Photosynthesis converts light energy into chemical energy. In the light-dependent reactions, "
    "chlorophyll absorbs photons and splits water, releasing oxygen and producing ATP and NADPH. The "
    "Calvin cycle then uses these molecules to fix carbon dioxide into three-carbon sugars, which the "
    "plant assembles into glucose, sucrose and starch for storage and growth.",
    "The quarterly report shows revenue up 12 percent year over year, driven mainly by the subscription "
    "business, while hardware sales declined for the third consecutive quarter. Operating margin "
    "improved to 18.4 percent thanks to lower logistics costs. Management expects growth to slow in "
    "the second half as currency headwinds intensify and promotional spending increases ahead of the "
    "holiday season.",
    "When you call the embed function with many texts, the library sorts them by length, concatenates "
    "the token rows of each group into one matrix, and runs the linear layers once per group so that "
    "each weight is read from memory a single time. Attention, by contrast, is computed sentence by "
    "sentence, because tokens of different sentences must never attend to each other. The pooled "
    "vectors are normalised to unit length, so a dot product gives the cosine similarity directly.",
    "A good bread dough needs time more than it needs effort. Mix flour, water, salt and a little "
    "yeast until no dry flour remains, cover the bowl, and leave it overnight in a cool kitchen. In the "
    "morning, fold the dough over itself a few times, shape it into a round loaf, let it rise for an "
    "hour, and bake it in a very hot covered pot for thirty minutes, then uncovered until the crust is "
    "deep brown and sounds hollow when tapped.",
    "The committee reviewed the proposal at length. Several members worried that the new zoning rules "
    "would push rents higher near the station, while others argued that allowing taller buildings was "
    "the only realistic way to add housing without spreading the town into the surrounding farmland. "
    "In the end the proposal passed with amendments requiring that one in five new flats be offered at "
    "below-market rents for at least twenty years, and that the developer fund a new cycle path.",
    # Longer than 256 word pieces: exercises truncation.
    " ".join([
        "Distributed consensus protocols let a group of machines agree on a sequence of values even when "
        "some of them crash or the network delays messages. In a leader-based protocol one node proposes "
        "values and the others acknowledge them; a value is committed once a majority has stored it. If "
        "the leader fails, the remaining nodes hold an election, and the new leader must discover any "
        "values the old one may have committed before it can make progress."] * 3),
    " ".join([
        "The museum's new wing houses a collection of textiles from the eighteenth and nineteenth "
        "centuries, including silk brocades, printed cottons and embroidered samplers made by children "
        "learning their letters. Curators spent four years cleaning and stabilising the fabrics, and the "
        "galleries are kept dim and cool to slow further fading."] * 4),
    "Rust's ownership model guarantees memory safety without a garbage collector: every value has a "
    "single owner, references are checked by the borrow checker at compile time, and data races are "
    "impossible in safe code because shared references cannot be used to mutate unless the type opts "
    "into interior mutability through a synchronised cell.",
    "Dear customer, thank you for your order #48213. Unfortunately one of the items, the blue ceramic "
    "teapot (SKU 1192-B), is out of stock until mid-March. You can wait for it, choose a different "
    "colour, or cancel that item for a full refund; the rest of your order has already been dispatched "
    "and should arrive within three working days.",
]

EDGE = [
    "",
    "a",
    "?",
    "ok ok ok ok ok ok ok ok ok ok ok ok ok ok ok ok ok ok ok ok",
    "Café crème, naïve façade, Zürich, São Paulo, Ærøskøbing",
    "🙂 👍 🚀 emoji only",
    "https://example.com/path?query=1&x=y#frag",
    "3.14159 2.71828 1.41421 1.73205 0.57721",
    "fn main() { println!(\"hello\"); }",
    "THE QUICK BROWN FOX JUMPS OVER THE LAZY DOG",
    "the the the the the",
    "Привет, как дела?",
    "東京都の天気はどうですか",
    "e-mail: jane.doe@example.org, tel. +33 1 23 45 67 89",
    "C++ vs. C# vs. F#: which one for a game engine?",
    "don't won't can't shouldn't y'all'd've",
    "Supercalifragilisticexpialidocious antidisestablishmentarianism pneumonoultramicroscopicsilicovolcanoconiosis",
    "\t  leading and trailing whitespace   \n",
]

# A 20-word query used by the latency benchmark (about 25 word pieces with [CLS]/[SEP]).
QUERY_20_WORDS = ("find a tool that can reserve a quiet table for four at an Italian trattoria "
                  "near Montparnasse tomorrow around seven")


def _jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(l) for l in f if l.strip()]


def sample_texts():
    """~300 varied texts, fixed order."""
    rng = random.Random(20240601)
    with open(os.path.join(EVAL, "banking77", "train.csv"), encoding="utf-8") as f:
        banking77 = [r["text"] for r in csv.DictReader(f)]
    clinc = [r["text"] for r in _jsonl(os.path.join(EVAL, "clinc150", "train.jsonl"))]
    claims = [r["text"] for r in _jsonl(os.path.join(EVAL, "scifact", "queries.train.jsonl"))]
    abstracts = [(r["title"] + " " + r["text"]).strip()
                 for r in _jsonl(os.path.join(EVAL, "scifact", "corpus.jsonl"))]
    out = COMMANDS + BANKING + TOOLS + PARAGRAPHS + EDGE
    out += rng.sample(banking77, 65)
    out += rng.sample(clinc, 65)
    out += rng.sample(claims, 30)
    out += rng.sample(abstracts, 40)
    return out


# Vocabulary for synthetic tool descriptions (throughput benchmark).
_VERBS = ["Searches", "Creates", "Updates", "Deletes", "Lists", "Fetches", "Summarises", "Translates",
          "Validates", "Exports", "Imports", "Schedules", "Monitors", "Analyses", "Converts", "Books"]
_OBJECTS = ["calendar events", "customer invoices", "support tickets", "flight itineraries",
            "shipping labels", "code repositories", "weather forecasts", "bank transactions",
            "recipe collections", "music playlists", "news articles", "medical appointments",
            "hotel reservations", "spreadsheet rows", "sensor readings", "employee timesheets"]
_DETAILS = ["by date range and status", "for a given user account", "across all connected services",
            "with pagination and sorting", "using the latest available data",
            "in the user's preferred language", "with optional filters on tags and owners",
            "and returns a short summary for each result", "respecting the caller's permissions",
            "within the configured rate limits"]
_WHEN = ["Use it when the user asks about", "Call this tool whenever a request mentions",
         "Prefer this over web search for questions about", "Do not use it for anything other than"]
_EXTRA = ["The response is JSON with an id, a title and a timestamp for every item.",
          "Errors are returned with a code and a human-readable message.",
          "Results are cached for five minutes.", "At most fifty items are returned per call.",
          "Times are given in UTC unless a time zone is passed.",
          "Requires the user to have connected their account first.",
          "Supports English, French, German and Spanish input.",
          "Large requests may take several seconds to complete."]


def tool_descriptions(n=2000, seed=7):
    """n synthetic tool descriptions of roughly 50-110 word pieces each."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        name = f"{rng.choice(_VERBS).lower()}_{rng.choice(_OBJECTS).replace(' ', '_')}_{i}"
        parts = [f"{name}:", rng.choice(_VERBS), rng.choice(_OBJECTS), rng.choice(_DETAILS) + "."]
        parts += [rng.choice(_WHEN), rng.choice(_OBJECTS), "or", rng.choice(_OBJECTS) + "."]
        parts += rng.sample(_EXTRA, rng.randint(2, 5))
        out.append(" ".join(parts))
    return out
