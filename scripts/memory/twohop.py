#!/usr/bin/env python3
"""Two-hop memory questions from three generators that share nothing but their shape.

An entity (a customer, a member, a client) has several notes, one per kind of fact; a link
note (an order, a ticket, a booking) names the entity; a question names only the link and
asks one thing about its owner. Each generator has its own codes, fact wordings and
question forms, so a mechanism fitted on one can be shown on the others.

    python3 scripts/memory/twohop.py OUT_DIR [--family shop|club|agency|all] [--n 1500]
    ruche index OUT_DIR/idx --chunks OUT_DIR/chunks.jsonl
    ruche search OUT_DIR/idx --batch OUT_DIR/queries.jsonl --json > OUT_DIR/hits.jsonl
    python3 scripts/memory/twohop.py OUT_DIR --score OUT_DIR/hits.jsonl

Scored: the answer note in the first 3 hits, and the number of hits returned.
"""
import argparse
import json
import os
import random

FAMILIES = {
    "shop": {
        "entity": lambda r: f"CUST-{r.randint(10000, 99999)}",
        "link": lambda r: f"NW-{r.randint(10000, 99999)}",
        "link_note": [
            "Order {link} ({item}) was placed by {entity}.",
            "{entity} bought a {item} under order {link}.",
        ],
        "items": ["tent", "stove", "backpack", "kayak", "headlamp", "jacket", "boots"],
        "facts": {
            "contact": ["{entity} only answers text messages.", "{entity} wants to be reached by email, never by phone.",
                        "{entity} picks up the phone after 6 pm only."],
            "address": ["{entity} ships to a locker at 14 Harbour Road, Leeds.", "{entity} has parcels delivered to her office in Ghent.",
                        "{entity} moved to Porto last spring; deliveries go there now."],
            "language": ["{entity} speaks Portuguese and little English.", "{entity} prefers German for anything written.",
                         "{entity} is more comfortable in Spanish."],
            "history": ["{entity} returned two pairs of boots last year.", "{entity} complained that a stove arrived dented.",
                        "{entity} once disputed a charge with her bank."],
            "payment": ["{entity} pays by bank transfer, not by card.", "{entity} uses store credit whenever she can.",
                        "{entity} splits payments into three instalments."],
        },
        "questions": {
            "contact": ["who do I notify for {link} and how?", "how do we get hold of whoever placed {link}?"],
            "address": ["where should the replacement for {link} go?", "which address does the buyer of {link} use?"],
            "language": ["what language should the reply about {link} be in?", "can I write to the person behind {link} in English?"],
            "history": ["has the buyer of {link} had trouble with us before?", "anything I should know about the past of the customer on {link}?"],
            "payment": ["how will the owner of {link} settle the balance?", "what payment method does the customer of {link} use?"],
        },
    },
    "club": {
        "entity": lambda r: f"MBR-{r.randint(1000, 9999)}",
        "link": lambda r: f"TKT{r.randint(100000, 999999)}",
        "link_note": [
            "Support ticket {link} about the {item} was opened by member {entity}.",
            "Member {entity} raised {link}: the {item} is broken.",
        ],
        "items": ["locker", "rowing machine", "sauna door", "parking badge", "court booking"],
        "facts": {
            "contact": ["Member {entity} reads WhatsApp, ignores voicemail.", "Best to call {entity} on the landline in the morning.",
                        "{entity} asked that all messages go through her husband."],
            "schedule": ["{entity} trains on Tuesday and Friday evenings.", "{entity} comes in at 6 am before work.",
                         "{entity} only visits on weekends."],
            "health": ["{entity} has a knee injury and avoids running.", "{entity} is recovering from shoulder surgery.",
                       "{entity} has asthma; keep the inhaler policy in mind."],
            "plan": ["{entity} is on the family plan, renewed in March.", "{entity} holds a student membership until June.",
                     "{entity} pays for the premium tier with spa access."],
            "trainer": ["{entity} works with coach Ilse on strength.", "{entity} dropped personal training in May.",
                        "{entity} books swimming lessons with Marco."],
        },
        "questions": {
            "contact": ["what's the best way to let the member on {link} know?", "how should I reach the person who raised {link}?"],
            "schedule": ["when is the member behind {link} usually in?", "at what time could we meet whoever opened {link}?"],
            "health": ["any medical notes on the member of {link}?", "is there a health issue to consider for the person on {link}?"],
            "plan": ["which membership does the opener of {link} have?", "what subscription is the member from {link} on?"],
            "trainer": ["who coaches the member that filed {link}?", "does the person on {link} have a trainer?"],
        },
    },
    "agency": {
        "entity": lambda r: f"ACC{r.randint(100, 999)}-{r.choice('ABCDEFGH')}",
        "link": lambda r: f"BK-{r.randint(1000, 9999)}-{r.randint(10, 99)}",
        "link_note": [
            "Booking {link} to {item} belongs to account {entity}.",
            "Account {entity} reserved {link} ({item}).",
        ],
        "items": ["Lisbon", "Oslo", "Crete", "Kyoto", "Marrakesh"],
        "facts": {
            "contact": ["{entity}: send everything to the assistant's inbox.", "{entity} is reachable on Signal only while travelling.",
                        "{entity} wants a call before any change, no emails."],
            "diet": ["{entity} is vegetarian and allergic to nuts.", "{entity} eats halal.", "{entity} cannot have gluten."],
            "seating": ["{entity} always takes an aisle seat.", "{entity} needs extra legroom after a hip operation.",
                        "{entity} likes the window and sits near the front."],
            "loyalty": ["{entity} has gold status with two airlines.", "{entity} collects hotel points, never miles.",
                        "{entity} has no loyalty cards."],
            "budget": ["{entity} approves anything under 2,000 euros.", "{entity} travels on a tight company budget.",
                       "{entity} does not care about price, only comfort."],
        },
        "questions": {
            "contact": ["how do I tell the traveller of {link} about the delay?", "who gets the update for {link}, and through what?"],
            "diet": ["what can the client on {link} eat?", "any meal restrictions for the person travelling on {link}?"],
            "seating": ["which seat should I pick for {link}?", "where does the holder of {link} like to sit?"],
            "loyalty": ["should I add a frequent flyer number to {link}?", "does the client of {link} collect points anywhere?"],
            "budget": ["how much can I spend upgrading {link}?", "is the owner of {link} price-sensitive?"],
        },
    },
}


def generate(family, n, seed):
    spec = FAMILIES[family]
    r = random.Random(seed)
    chunks, queries, gold = [], [], []
    used = set()
    for e in range(n):
        entity = spec["entity"](r)
        while entity in used:
            entity = spec["entity"](r)
        used.add(entity)
        # Every entity has a note of each kind (the distractors are its other notes).
        fact_ids = {}
        for kind, templates in spec["facts"].items():
            fid = f"{family}-{e}-{kind}"
            chunks.append({"id": fid, "content": r.choice(templates).format(entity=entity)})
            fact_ids[kind] = fid
        links = []
        for k in range(1 + r.randrange(2)):
            link = spec["link"](r)
            while link in used:
                link = spec["link"](r)
            used.add(link)
            chunks.append({"id": f"{family}-{e}-link{k}",
                           "content": r.choice(spec["link_note"]).format(link=link, entity=entity, item=r.choice(spec["items"]))})
            links.append(link)
        if e % 5 == 0:  # a few questions per generator
            kind = r.choice(sorted(spec["questions"]))
            link = r.choice(links)
            q = r.choice(spec["questions"][kind]).format(link=link)
            qid = f"{family}-q{e}"
            queries.append({"id": qid, "text": q, "kind": "chunks"})
            gold.append((qid, fact_ids[kind]))
    return chunks, queries, gold


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--family", default="all")
    ap.add_argument("--n", type=int, default=1500)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--score")
    a = ap.parse_args()
    families = sorted(FAMILIES) if a.family == "all" else [a.family]
    if a.score:
        gold = dict(line.split("\t") for line in open(os.path.join(a.out, "gold.tsv")).read().splitlines())
        per = {}
        for line in open(a.score):
            res = json.loads(line)
            qid = res["query"]["id"] if "query" in res and isinstance(res["query"], dict) else res.get("id")
            hits = [h["id"] for h in res.get("hits", [])]
            fam = qid.split("-q")[0]
            s = per.setdefault(fam, [0, 0, 0])
            s[0] += 1
            s[1] += gold[qid] in hits[:3]
            s[2] += len(hits)
        for fam, (n, top3, ret) in sorted(per.items()):
            print(f"{fam}: answer in the first 3 {top3 / n:.3f}, returned {ret / n:.2f} ({n} questions)")
        return
    os.makedirs(a.out, exist_ok=True)
    allc, allq, allg = [], [], []
    for i, fam in enumerate(families):
        c, q, g = generate(fam, a.n, a.seed + i)
        allc += c; allq += q; allg += g
    random.Random(a.seed).shuffle(allc)
    with open(os.path.join(a.out, "chunks.jsonl"), "w") as f:
        f.writelines(json.dumps(c) + "\n" for c in allc)
    with open(os.path.join(a.out, "queries.jsonl"), "w") as f:
        f.writelines(json.dumps(q) + "\n" for q in allq)
    with open(os.path.join(a.out, "gold.tsv"), "w") as f:
        f.writelines(f"{q}\t{d}\n" for q, d in allg)
    print(f"{len(allc)} chunks, {len(allq)} questions")


if __name__ == "__main__":
    main()
