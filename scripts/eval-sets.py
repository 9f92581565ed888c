#!/usr/bin/env python3
"""Builds the third-party evaluation sets that are fetched, not committed (run by
scripts/fetch-assets). Writes phiflow's gold JSONL (`{"id","kind","text","spans"}`, code-point
offsets, canonical labels) into OUT_DIR:

- philter-i2b2.jsonl: the five notes of the 2014 i2b2/UTHealth de-identification corpus that the
  philter-ucsf 1.0.3 package ships, with their i2b2 gold (clinical notes nobody here wrote).
- presidio-dev.jsonl / presidio-test.jsonl: general-language text from Presidio's evaluation
  templates (presidio-evaluator 0.3.2, MIT), filled the way its PresidioSentenceFaker fills them:
  one FakeNameGenerator.com person record per sentence, Faker (en_US, seeded) for the rest, with
  Presidio's own address, phone, age and driver's licence formats. Even template numbers make the
  dev half, odd ones the test half, so no test sentence shares a template with a tuned one.

Gold is what HIPAA Safe Harbor requires removed (i2b2's hospitals count as places, as in ASQ-PHI):
states, countries, nationalities, organizations, job titles, titles, weekdays and bare years are
not gold. phiflow masks organizations all the same (an employer is class R in its labels), which
costs these sets precision.

usage: eval-sets.py PRESIDIO_RAW_DATA_DIR PHILTER_DATA_DIR OUT_DIR   (faker importable)
"""

import csv
import json
import random
import re
import sys
import xml.etree.ElementTree as ET
from datetime import date, datetime
from pathlib import Path

from faker import Faker

SEED = 42
FILLS_PER_TEMPLATE = 5
LOWER_CASE_RATIO = 0.05

# i2b2 2014 TYPE → canonical label; None: not an identifier under Safe Harbor.
I2B2 = {
    "PATIENT": "NAME", "DOCTOR": "NAME", "USERNAME": "USERNAME",
    "PROFESSION": None, "COUNTRY": None, "STATE": None,
    "HOSPITAL": "LOCATION", "ORGANIZATION": None, "DEPARTMENT": "LOCATION",
    "ROOM": "LOCATION", "LOCATION-OTHER": "LOCATION", "OTHER": "LOCATION",
    "STREET": "STREET_ADDRESS", "CITY": "CITY", "ZIP": "ZIP_CODE",
    "AGE": "AGE", "DATE": "DATE",
    "PHONE": "PHONE", "FAX": "FAX", "EMAIL": "EMAIL", "URL": "URL", "IPADDR": "IP_ADDRESS",
    "SSN": "SSN", "MEDICALRECORD": "MEDICAL_RECORD_NUMBER", "HEALTHPLAN": "HEALTH_PLAN_NUMBER",
    "ACCOUNT": "ACCOUNT_NUMBER", "LICENSE": "LICENSE_NUMBER", "VEHICLE": "VEHICLE_ID",
    "DEVICE": "DEVICE_ID", "BIOID": "BIOMETRIC_ID", "IDNUM": "OTHER_IDENTIFIER",
}

CLASS = {
    "NAME": "A_NAMES", "USERNAME": "R_OTHER_UNIQUE_ID", "LOCATION": "B_GEOGRAPHIC",
    "STREET_ADDRESS": "B_GEOGRAPHIC", "BUILDING_NUMBER": "B_GEOGRAPHIC",
    "SECONDARY_ADDRESS": "B_GEOGRAPHIC", "CITY": "B_GEOGRAPHIC", "ZIP_CODE": "B_GEOGRAPHIC",
    "AGE": "C_DATES", "DATE": "C_DATES", "PHONE": "D_TELEPHONE", "FAX": "E_FAX",
    "EMAIL": "F_EMAIL", "URL": "N_URL", "IP_ADDRESS": "O_IP_ADDRESS", "SSN": "G_SSN",
    "MEDICAL_RECORD_NUMBER": "H_MEDICAL_RECORD", "HEALTH_PLAN_NUMBER": "I_HEALTH_PLAN",
    "ACCOUNT_NUMBER": "J_ACCOUNT", "CREDIT_CARD": "J_ACCOUNT", "IBAN": "J_ACCOUNT",
    "LICENSE_NUMBER": "K_CERTIFICATE_LICENSE", "DRIVERS_LICENSE": "K_CERTIFICATE_LICENSE",
    "VEHICLE_ID": "L_VEHICLE", "DEVICE_ID": "M_DEVICE", "BIOMETRIC_ID": "P_BIOMETRIC",
    "OTHER_IDENTIFIER": "R_OTHER_UNIQUE_ID",
}


def span(start, end, label):
    return {"start": start, "end": end, "label": label, "class": CLASS[label]}


def i2b2_notes(xml_dir):
    notes = []
    for path in sorted(Path(xml_dir).glob("*.xml")):
        root = ET.parse(path).getroot()
        text = root.find("TEXT").text
        spans = []
        for tag in root.find("TAGS"):
            kind = tag.get("TYPE")
            if kind not in I2B2:
                raise SystemExit(f"{path.name}: unknown i2b2 type {kind}")
            start, end = int(tag.get("start")), int(tag.get("end"))
            if text[start:end] != tag.get("text"):
                raise SystemExit(f"{path.name}: tag {tag.get('id')} does not match its text")
            if I2B2[kind]:
                spans.append(span(start, end, I2B2[kind]))
        spans.sort(key=lambda s: (s["start"], -s["end"]))
        notes.append({"id": f"i2b2-{path.stem}", "kind": "i2b2", "text": text, "spans": spans})
    return notes


# --- Presidio's templates, filled as PresidioSentenceFaker fills them -------------------------

# Presidio's AddressProviderNew formats and weights; parts are (placeholder, gold label or None).
ADDRESS_FORMATS = [
    ("{{building_number}} {{street_name}} {{secondary_address}} {{city}} {{state}}", 5),
    ("{{building_number}} {{street_name}} {{secondary_address}} {{city}} {{state_abbr}}", 5),
    ("{{building_number}} {{street_name}} {{secondary_address}} {{city}} {{country}}", 5),
    ("{{building_number}} {{street_name}}\n {{secondary_address}}\n {{city}}\n {{country}}", 5),
    ("{{building_number}} {{street_name}}\n {{secondary_address}}\n {{city}}\n {{country}} {{postcode}}", 5),
    ("{{street_name}} {{street_name}}\n {{secondary_address}}\n {{city}}\n {{country}} {{postcode}}", 5),
    ("the corner of {{street_name}} and {{street_name}}", 3),
    ("{{first_name}} and {{street_name}}", 3),
    ("{{street_address}}, {{city}}, {{country}}", 5),
    ("{{street_address}} {{secondary_address}}, {{city}}, {{country}} {{postcode}}", 5),
    ("{{street_address}}\n{{city}}, {{state_abbr}} {{postcode}}", 25),
    ("{{street_address}}\n{{city}}\n, {{state_abbr}}\n {{postcode}}", 25),
    ("{{street_address}}\n{{city}}\n, {{state_abbr}}\n {{country}} {{postcode}}", 25),
    ("{{military_apo}}\nAPO {{military_state}} {{postcode}}", 1),
    ("{{military_ship}} {{last_name}}\nFPO {{military_state}} {{postcode}}", 1),
    ("{{military_dpo}}\nDPO {{military_state}} {{postcode}}", 1),
]

# Presidio's PhoneNumberProviderNew formats.
PHONE_FORMATS = (
    ["##########"] * 2 + ["###-###-####"] * 2 + ["###-#######",
    "07700 ### ###", "07700 ######", "07700######", "(07700) ### ###", "(07700) ######",
    "(07700)######", "+447700 ### ###", "+447700 ######", "+447700######",
    "+91##########", "0##########", "##########"]
    + [f"+41 {d}# ### ## ##" for d in range(2, 10)]
    + [f"+41 (0){d}# ### ## ##" for d in range(2, 10)]
    + ["+46 (0)8 ### ### ##", "+46 (0)## ## ## ##", "+46 (0)### ### ##"]
    + ["(###)###-####"] * 4 + ["###.###.####"] * 2
    + ["###-###-####x###", "###-###-####x####", "(###)###-####x###", "(###)###-####x####",
       "###.###.####x###", "###.###.####x####", "+1-###-###-####", "001-###-###-####",
       "+1-###-###-####x###"]
)

# Presidio's AgeProvider formats and weights.
AGE_FORMATS = [("%#", 0.8), ("%", 0.1), ("1.%", 0.02), ("2.%", 0.02), ("100", 0.02),
               ("101", 0.01), ("104", 0.01), ("0.%", 0.02)]

LABEL = {
    "person": "NAME", "name": "NAME", "name_female": "NAME", "name_male": "NAME",
    "first_name": "NAME", "first_name_male": "NAME", "first_name_female": "NAME",
    "first_name_nonbinary": "NAME", "last_name": "NAME", "last_name_male": "NAME",
    "last_name_female": "NAME",
    "street_name": "STREET_ADDRESS", "street_address": "STREET_ADDRESS",
    "building_number": "BUILDING_NUMBER", "secondary_address": "SECONDARY_ADDRESS",
    "city": "CITY", "postcode": "ZIP_CODE", "zipcode": "ZIP_CODE",
    "military_apo": "STREET_ADDRESS", "military_ship": "STREET_ADDRESS",
    "military_dpo": "STREET_ADDRESS",
    "credit_card_number": "CREDIT_CARD", "iban": "IBAN", "ssn": "SSN",
    "ip_address": "IP_ADDRESS", "url": "URL", "email": "EMAIL",
    "us_driver_license": "DRIVERS_LICENSE", "phone_number": "PHONE",
    "date_time": "DATE", "date_of_birth": "DATE", "age": "AGE",
}
NOT_GOLD = {"state", "state_abbr", "country", "military_state", "nationality", "nation_woman",
            "nation_man", "nation_plural", "organization", "job", "prefix", "prefix_male",
            "prefix_female", "year", "day_of_week"}

TOKEN = re.compile(r"\{\{\s*(\w+)\s*\}\}")


def camel_to_snake(name):
    name = re.sub("(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub("([a-z0-9])([A-Z])", r"\1_\2", name).lower()


RENAME = {
    "country": "country_code", "state": "state_abbr", "country_full": "country",
    "name_set": "nationality", "street_address": "street_name", "state_full": "state",
    "given_name": "first_name", "surname": "last_name", "title": "prefix",
    "email_address": "email", "telephone_number": "phone_number", "birthday": "date_of_birth",
    "occupation": "job", "zip_code": "zipcode", "username": "user_name",
}


def person_records(raw, rng):
    """FakeNameGenerator.com rows with Presidio's renames (load_fake_person_df)."""
    with open(raw / "FakeNameGenerator.com_3000.csv", encoding="utf-8-sig", newline="") as f:
        rows = list(csv.DictReader(f))
    records = []
    for row in rows:
        r = {RENAME.get(camel_to_snake(k), camel_to_snake(k)): v for k, v in row.items()}
        if rng.random() > 0.2:
            r["person"] = f"{r['first_name']} {r['last_name']}"
        else:
            gap = " " if rng.random() > 0.5 else ". "
            r["person"] = f"{r['first_name']} {r['middle_initial']}{gap}{r['last_name']}"
        r["name"] = r["person"]
        for g in ("female", "male"):
            mine = r["gender"] == g
            r[f"first_name_{g}"] = r["first_name"] if mine else ""
            r[f"prefix_{g}"] = r["prefix"] if mine else ""
            r[f"last_name_{g}"] = r["last_name"] if mine else ""
        r.pop("cc_number", None)  # Presidio relies on Faker's card numbers
        records.append(r)
    return records


def column(path, name, delimiter=","):
    with open(path, encoding="utf-8-sig", newline="") as f:
        return [row[name] for row in csv.DictReader(f, delimiter=delimiter) if row[name]]


def driver_license_formats(path):
    formats, in_usa = [], False
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if line.strip() == "usa:":
            in_usa = True
        elif in_usa and line.strip().startswith("- "):
            formats.append(line.strip()[2:].strip('"'))
    return formats


class Filler:
    def __init__(self, raw, rng):
        self.rng = rng
        self.fake = Faker("en_US")
        self.fake.seed_instance(SEED)
        self.records = person_records(raw, rng)
        self.orgs = column(raw / "companies_and_organizations.csv", "organization", "\t")
        nat = raw / "nationalities.csv"
        self.nations = {k: column(nat, k) for k in ("nationality", "man", "woman", "plural")}
        self.licences = driver_license_formats(raw / "us_driver_license_format.yaml")

    def leaf(self, key):
        """A value that no record supplied, from Faker and Presidio's providers."""
        f, rng = self.fake, self.rng
        if key in ("person", "name"):
            return f.name()
        if key == "phone_number":
            return f.numerify(rng.choice(PHONE_FORMATS))
        if key == "age":
            fmt = rng.choices([a for a, _ in AGE_FORMATS], [w for _, w in AGE_FORMATS])[0]
            return f.numerify(fmt)
        if key == "ip_address":
            return f.ipv4() if rng.random() < 0.8 else f.ipv6()
        if key == "organization":
            return rng.choice(self.orgs)
        if key == "nationality":
            return rng.choice(self.nations["nationality"])
        if key.startswith("nation_"):
            return rng.choice(self.nations[key[len("nation_"):]])
        if key == "us_driver_license":
            return f.bothify(rng.choice(self.licences))
        if key == "credit_card_number":
            return f.credit_card_number()
        # Fixed ends keep the set the same on any day (Faker's defaults end today).
        if key == "date_of_birth":
            return str(f.date_between(start_date=date(1930, 1, 1), end_date=date(2008, 1, 1)))
        if key == "date_time":
            return str(f.date_time_between(start_date=datetime(1970, 1, 1), end_date=datetime(2025, 1, 1)))
        return str(getattr(f, key)())

    def address(self):
        """Presidio's address formats, expanded into parts so that state and country stay
        outside the gold."""
        fmt = self.rng.choices([a for a, _ in ADDRESS_FORMATS], [w for _, w in ADDRESS_FORMATS])[0]
        return self.expand(fmt, {})

    def value(self, key, record):
        if key == "address":
            return self.address()
        if record.get(key):
            v = record.pop(key)
        else:
            v = self.leaf(key)
        return [(v, key)]

    def expand(self, template, record):
        """Template → [(text, key or None)] pieces, in order."""
        pieces, pos = [], 0
        for m in TOKEN.finditer(template):
            pieces.append((template[pos:m.start()], None))
            pieces.extend(self.value(m.group(1).lower(), record))
            pos = m.end()
        pieces.append((template[pos:], None))
        return pieces

    def sentence(self, template):
        record = dict(self.rng.choice(self.records))
        pieces = self.expand(template, record)
        lower = self.rng.random() < LOWER_CASE_RATIO
        text, spans, n = "", [], 0
        for piece, key in pieces:
            piece = piece.lower() if lower else piece
            if key is not None and key not in NOT_GOLD:
                if key not in LABEL:
                    raise SystemExit(f"template placeholder {key!r} has no label")
                stripped = piece.strip()
                if stripped:
                    start = n + len(piece) - len(piece.lstrip())
                    spans.append(span(start, start + len(stripped), LABEL[key]))
            text += piece
            n += len(piece)
        return text, spans


def presidio_notes(raw):
    rng = random.Random(SEED)
    filler = Filler(raw, rng)
    templates = [
        line.strip().replace("\\n", "\n")
        for line in (raw / "templates.txt").read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    halves = ([], [])
    for t, template in enumerate(templates):
        for k in range(FILLS_PER_TEMPLATE):
            text, spans = filler.sentence(template)
            halves[t % 2].append(
                {"id": f"presidio-t{t:03}-{k}", "kind": "presidio", "text": text, "spans": spans}
            )
    return halves


def write(path, notes):
    with open(path, "w", encoding="utf-8") as f:
        for note in notes:
            f.write(json.dumps(note, ensure_ascii=False) + "\n")


def main():
    raw, philter, out = (Path(a) for a in sys.argv[1:4])
    out.mkdir(parents=True, exist_ok=True)
    write(out / "philter-i2b2.jsonl", i2b2_notes(philter / "i2b2_xml"))
    dev, test = presidio_notes(raw)
    write(out / "presidio-dev.jsonl", dev)
    write(out / "presidio-test.jsonl", test)


if __name__ == "__main__":
    main()
