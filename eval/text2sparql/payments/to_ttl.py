#!/usr/bin/env python3
"""Converts the DABstep payment-fees tables into an RDF graph (Turtle) with its own
small OWL vocabulary, for the "payments" text-to-SPARQL development set.

    python3 eval/text2sparql/payments/to_ttl.py [DATA_DIR] > eval/text2sparql/payments/payments.ttl

DATA_DIR defaults to fixtures/payment-fees/data (the six tables as JSON; see
fixtures/payment-fees/README.md). Standard library only; the output is deterministic
(every block and every object list is sorted).

The vocabulary (https://example.org/payments/vocab#, prefix `pay:`) declares each class
as owl:Class and each property as owl:ObjectProperty or owl:DatatypeProperty, all with
rdfs:label, rdfs:comment, rdfs:domain and rdfs:range (xsd datatypes for literals). Every
property has one domain class, so RDFS entailment over the graph adds no type that is
not asserted already. Instances live under https://example.org/payments/data/.

What the conversion decides:

- A fee-rule condition that is null or an empty list in DABstep ("applies to every
  value") is left out: such a rule has no pay:applicableAccountType (etc.) triple.
- Merchant and acquirer names, card schemes and capture-delay / volume / fraud-level
  labels are kept as written in the data (`Belles_cookbook_store`, `gringotts`, `<3`).
- Monthly amounts (sums of cent amounts with float noise in the source) are rounded to
  cents; the fraud percentage to 4 decimal places. Decimals are written in canonical
  form (no exponent, no trailing zeros).
- Countries get their English names (the data has ISO codes only); account types and
  ACIs get the names of the DABstep manual. Seven MCCs named by fee rules are missing
  from the MCC table: they become categories with a code and no label.
"""

import json
import pathlib
import sys
from decimal import Decimal

VOCAB = "https://example.org/payments/vocab#"
DATA = "https://example.org/payments/data/"

COUNTRY_NAMES = {
    "FR": "France",
    "GB": "United Kingdom",
    "IT": "Italy",
    "NL": "Netherlands",
    "US": "United States",
}

ACCOUNT_TYPES = {
    "R": "Enterprise - Retail",
    "D": "Enterprise - Digital",
    "H": "Enterprise - Hospitality",
    "F": "Platform - Franchise",
    "S": "Platform - SaaS",
    "O": "Other",
}

ACIS = {
    "A": "Card present - Non-authenticated",
    "B": "Card Present - Authenticated",
    "C": "Tokenized card with mobile device",
    "D": "Card Not Present - Card On File",
    "E": "Card Not Present - Recurring Bill Payment",
    "F": "Card Not Present - 3-D Secure",
    "G": "Card Not Present - Non-3-D Secure",
}

MONTHS = [
    "January", "February", "March", "April", "May", "June", "July", "August",
    "September", "October", "November", "December",
]

# (local name, label, comment)
CLASSES = [
    ("Merchant", "merchant",
     "A business that accepts card payments through one or more acquirers."),
    ("Acquirer", "acquirer",
     "A bank that processes card payments on behalf of merchants."),
    ("Country", "country", "A country, identified by its ISO 3166-1 alpha-2 code."),
    ("CardScheme", "card scheme",
     "A card network (brand) whose fee rules price the transactions made with its cards."),
    ("MerchantCategory", "merchant category",
     "A merchant category code (MCC): a four-digit code that classifies a business by "
     "the kind of goods or services it provides."),
    ("AccountType", "account type",
     "The kind of account a merchant holds (retail, digital, hospitality, franchise, "
     "SaaS, other)."),
    ("AuthorizationCharacteristicsIndicator", "authorization characteristics indicator",
     "The authorization characteristics indicator (ACI) of a transaction: how the card "
     "was presented and authenticated."),
    ("FeeRule", "fee rule",
     "A pricing rule of a card scheme. A transaction pays fixed amount + rate x "
     "transaction value / 10000 EUR under a rule when it meets every condition the rule "
     "states; a condition the rule does not state applies to every value."),
    ("MonthlyFigure", "monthly figure",
     "The card payment volume and fraud volume of one merchant in one calendar month."),
]

# (local name, kind, label, domain, range, comment); kind "o" object, "d" datatype
PROPERTIES = [
    ("acquirer", "o", "acquirer", "Merchant", "Acquirer",
     "An acquirer that processes the merchant's card payments."),
    ("merchantCategory", "o", "merchant category", "Merchant", "MerchantCategory",
     "The merchant category code (MCC) of the merchant."),
    ("accountType", "o", "account type", "Merchant", "AccountType",
     "The account type of the merchant."),
    ("captureDelay", "d", "capture delay", "Merchant", "xsd:string",
     "How long after authorization the merchant captures payments: '<3', '3-5' or '>5' "
     "days, 'immediate' or 'manual'."),
    ("country", "o", "country", "Acquirer", "Country",
     "The country the acquirer is based in."),
    ("countryCode", "d", "country code", "Country", "xsd:string",
     "The ISO 3166-1 alpha-2 code of the country."),
    ("mccCode", "d", "MCC code", "MerchantCategory", "xsd:integer",
     "The numeric merchant category code; the category's label is its description."),
    ("accountTypeCode", "d", "account type code", "AccountType", "xsd:string",
     "The one-letter code of the account type (R, D, H, F, S, O)."),
    ("aciCode", "d", "ACI code", "AuthorizationCharacteristicsIndicator", "xsd:string",
     "The one-letter code of the authorization characteristics indicator (A to G)."),
    ("feeId", "d", "fee ID", "FeeRule", "xsd:integer", "The identifier of the fee rule."),
    ("cardScheme", "o", "card scheme", "FeeRule", "CardScheme",
     "The card scheme whose transactions the rule prices."),
    ("applicableAccountType", "o", "applicable account type", "FeeRule", "AccountType",
     "An account type the rule applies to. A rule without any applicable account type "
     "applies to every account type."),
    ("applicableMerchantCategory", "o", "applicable merchant category", "FeeRule",
     "MerchantCategory",
     "A merchant category the rule applies to. A rule without any applicable merchant "
     "category applies to every category."),
    ("applicableACI", "o", "applicable ACI", "FeeRule",
     "AuthorizationCharacteristicsIndicator",
     "An authorization characteristics indicator the rule applies to. A rule without "
     "any applicable ACI applies to every ACI."),
    ("requiredCaptureDelay", "d", "required capture delay", "FeeRule", "xsd:string",
     "The merchant capture delay the rule applies to ('<3', '3-5', '>5', 'immediate', "
     "'manual'). Absent: any capture delay."),
    ("requiredMonthlyVolume", "d", "required monthly volume", "FeeRule", "xsd:string",
     "The merchant's monthly card volume in EUR the rule applies to ('<100k', "
     "'100k-1m', '1m-5m', '>5m'). Absent: any volume."),
    ("requiredMonthlyFraudLevel", "d", "required monthly fraud level", "FeeRule",
     "xsd:string",
     "The merchant's monthly fraud level (fraud volume / total volume) the rule applies "
     "to ('<7.2%', '7.2%-7.7%', '7.7%-8.3%', '>8.3%'). Absent: any fraud level."),
    ("forCreditTransactions", "d", "for credit transactions", "FeeRule", "xsd:boolean",
     "true: the rule applies to credit card transactions only; false: to debit card "
     "transactions only. Absent: to both."),
    ("intracountry", "d", "intracountry", "FeeRule", "xsd:boolean",
     "true: the rule applies only when the card's issuing country is the acquirer's "
     "country; false: only when they differ. Absent: in both cases."),
    ("fixedAmount", "d", "fixed amount", "FeeRule", "xsd:decimal",
     "The fixed part of the fee, in EUR per transaction."),
    ("rate", "d", "rate", "FeeRule", "xsd:integer",
     "The variable part of the fee, in basis points of the transaction value (the fee "
     "is fixed amount + rate x value / 10000)."),
    ("ofMerchant", "o", "of merchant", "MonthlyFigure", "Merchant",
     "The merchant the monthly figure belongs to."),
    ("year", "d", "year", "MonthlyFigure", "xsd:integer", "The calendar year."),
    ("month", "d", "month", "MonthlyFigure", "xsd:integer",
     "The calendar month, 1 (January) to 12 (December)."),
    ("totalVolume", "d", "total volume", "MonthlyFigure", "xsd:decimal",
     "The total card payment volume of the merchant in the month, in EUR."),
    ("fraudVolume", "d", "fraud volume", "MonthlyFigure", "xsd:decimal",
     "The volume of fraudulent card payments of the merchant in the month, in EUR."),
    ("fraudPercent", "d", "fraud percent", "MonthlyFigure", "xsd:decimal",
     "The fraud volume as a percentage of the total volume (rounded to 4 decimals)."),
    ("monthlyVolumeCategory", "d", "monthly volume category", "MonthlyFigure",
     "xsd:string",
     "The volume band of the month: '<100k', '100k-1m', '1m-5m' or '>5m' EUR."),
]


def literal(text):
    """A Turtle string literal."""
    escaped = (
        text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r")
    )
    return f'"{escaped}"'


def decimal(value, places=None):
    """A canonical xsd:decimal literal from a JSON number."""
    number = Decimal(repr(value))
    if places is not None:
        number = round(number, places)
    text = format(number.normalize(), "f")
    if text in ("-0", ""):
        text = "0"
    return f'"{text}"^^xsd:decimal'


def integer(value):
    return f'"{int(value)}"^^xsd:integer'


def boolean(value):
    return f'"{"true" if value else "false"}"^^xsd:boolean'


# data namespaces: kind -> Turtle prefix
KINDS = {
    "merchant": "merchant",
    "acquirer": "acquirer",
    "country": "country",
    "card-scheme": "scheme",
    "mcc": "mcc",
    "account-type": "accttype",
    "aci": "aci",
    "fee-rule": "rule",
    "monthly-figure": "month",
}


def iri(kind, key):
    """The prefixed name of an instance, e.g. merchant:Book_Haven for
    <https://example.org/payments/data/merchant/Book_Haven>."""
    key = str(key)
    if not key or not all(ch.isascii() and (ch.isalnum() or ch in "_-") for ch in key) \
            or key[0] == "-":
        raise ValueError(f"not a plain local name: {key!r}")
    return f"{KINDS[kind]}:{key}"


class Writer:
    def __init__(self):
        self.blocks = []

    def node(self, subject, pairs):
        """One subject block; pairs are (predicate, object), objects of consecutive
        equal predicates joined with commas."""
        grouped = []
        for pred, obj in pairs:
            if grouped and grouped[-1][0] == pred:
                grouped[-1][1].append(obj)
            else:
                grouped.append((pred, [obj]))
        lines = [subject]
        for i, (pred, objs) in enumerate(grouped):
            end = " ;" if i < len(grouped) - 1 else " ."
            lines.append(f"    {pred} {', '.join(objs)}{end}")
        self.blocks.append("\n".join(lines))


def load(data_dir, name):
    return json.loads((data_dir / f"{name}.json").read_text())


def main():
    if len(sys.argv) > 2 or (len(sys.argv) == 2 and sys.argv[1] in ("-h", "--help")):
        sys.exit(__doc__)
    repo = pathlib.Path(__file__).resolve().parents[3]
    data_dir = pathlib.Path(sys.argv[1]) if len(sys.argv) == 2 else (
        repo / "fixtures" / "payment-fees" / "data"
    )
    merchants = load(data_dir, "merchants")
    fees = load(data_dir, "fees")
    mccs = load(data_dir, "merchant_category_codes")
    countries = load(data_dir, "acquirer_countries")
    merchant_acquirers = load(data_dir, "merchant_acquirers")
    months = load(data_dir, "merchant_months")

    out = []
    out.append("# The DABstep payment-fees context tables as RDF, with their own vocabulary.")
    out.append("# Written by eval/text2sparql/payments/to_ttl.py from fixtures/payment-fees/data;")
    out.append("# do not edit. Data (c) Adyen, CC BY 4.0 (Adyen DABstep).")
    out.append("")
    out.append(f"@prefix pay: <{VOCAB}> .")
    out.append("@prefix owl: <http://www.w3.org/2002/07/owl#> .")
    out.append("@prefix rdf: <http://www.w3.org/1999/02/22-rdf-syntax-ns#> .")
    out.append("@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .")
    out.append("@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .")
    for kind, prefix in KINDS.items():
        out.append(f"@prefix {prefix}: <{DATA}{kind}/> .")
    out.append("")
    out.append("# ---- vocabulary ----")
    out.append("")
    out.append(f"<{VOCAB.rstrip('#')}> a owl:Ontology ;")
    out.append(f"    rdfs:label {literal('Payments vocabulary')}@en ;")
    out.append(
        "    rdfs:comment "
        + literal(
            "Merchants, acquirers, card-scheme fee rules, merchant categories and monthly "
            "payment figures (after the DABstep payment-fees tables)."
        )
        + "@en ."
    )
    out.append("")
    for name, label, comment in CLASSES:
        out.append(f"pay:{name} a owl:Class ;")
        out.append(f"    rdfs:label {literal(label)}@en ;")
        out.append(f"    rdfs:comment {literal(comment)}@en .")
        out.append("")
    for name, kind, label, domain, rng, comment in PROPERTIES:
        cls = "owl:ObjectProperty" if kind == "o" else "owl:DatatypeProperty"
        rng_term = rng if rng.startswith("xsd:") else f"pay:{rng}"
        out.append(f"pay:{name} a {cls} ;")
        out.append(f"    rdfs:label {literal(label)}@en ;")
        out.append(f"    rdfs:comment {literal(comment)}@en ;")
        out.append(f"    rdfs:domain pay:{domain} ;")
        out.append(f"    rdfs:range {rng_term} .")
        out.append("")

    w = Writer()

    # countries and acquirers
    for code in sorted({row["country_code"] for row in countries}):
        pairs = [("a", "pay:Country"), ("rdfs:label", literal(COUNTRY_NAMES.get(code, code)))]
        pairs.append(("pay:countryCode", literal(code)))
        w.node(iri("country", code), pairs)
    for row in sorted(countries, key=lambda r: r["acquirer"]):
        w.node(
            iri("acquirer", row["acquirer"]),
            [
                ("a", "pay:Acquirer"),
                ("rdfs:label", literal(row["acquirer"])),
                ("pay:country", iri("country", row["country_code"])),
            ],
        )

    # card schemes, account types, ACIs
    for scheme in sorted({row["card_scheme"] for row in fees}):
        w.node(iri("card-scheme", scheme), [("a", "pay:CardScheme"), ("rdfs:label", literal(scheme))])
    for code in sorted(ACCOUNT_TYPES):
        w.node(
            iri("account-type", code),
            [
                ("a", "pay:AccountType"),
                ("rdfs:label", literal(ACCOUNT_TYPES[code])),
                ("pay:accountTypeCode", literal(code)),
            ],
        )
    for code in sorted(ACIS):
        w.node(
            iri("aci", code),
            [
                ("a", "pay:AuthorizationCharacteristicsIndicator"),
                ("rdfs:label", literal(ACIS[code])),
                ("pay:aciCode", literal(code)),
            ],
        )

    # merchant categories: the MCC table plus codes only fee rules name
    descriptions = {row["mcc"]: row["description"] for row in mccs}
    codes = set(descriptions)
    codes |= {code for rule in fees for code in rule["merchant_category_code"] or []}
    codes |= {m["merchant_category_code"] for m in merchants}
    for code in sorted(codes):
        pairs = [("a", "pay:MerchantCategory")]
        if code in descriptions:
            pairs.append(("rdfs:label", literal(descriptions[code])))
        pairs.append(("pay:mccCode", integer(code)))
        w.node(iri("mcc", code), pairs)

    # merchants
    acquirers_of = {}
    for row in merchant_acquirers:
        acquirers_of.setdefault(row["merchant"], set()).add(row["acquirer"])
    for m in sorted(merchants, key=lambda r: r["merchant"]):
        pairs = [
            ("a", "pay:Merchant"),
            ("rdfs:label", literal(m["merchant"])),
            ("pay:merchantCategory", iri("mcc", m["merchant_category_code"])),
            ("pay:accountType", iri("account-type", m["account_type"])),
            ("pay:captureDelay", literal(str(m["capture_delay"]))),
        ]
        for acquirer in sorted(acquirers_of.get(m["merchant"], ())):
            pairs.append(("pay:acquirer", iri("acquirer", acquirer)))
        w.node(iri("merchant", m["merchant"]), pairs)

    # fee rules
    for rule in sorted(fees, key=lambda r: r["ID"]):
        pairs = [
            ("a", "pay:FeeRule"),
            ("rdfs:label", literal(f"Fee rule {rule['ID']}")),
            ("pay:feeId", integer(rule["ID"])),
            ("pay:cardScheme", iri("card-scheme", rule["card_scheme"])),
        ]
        for code in sorted(rule["account_type"] or []):
            pairs.append(("pay:applicableAccountType", iri("account-type", code)))
        for code in sorted(rule["merchant_category_code"] or []):
            pairs.append(("pay:applicableMerchantCategory", iri("mcc", code)))
        for code in sorted(rule["aci"] or []):
            pairs.append(("pay:applicableACI", iri("aci", code)))
        if rule["capture_delay"] is not None:
            pairs.append(("pay:requiredCaptureDelay", literal(rule["capture_delay"])))
        if rule["monthly_volume"] is not None:
            pairs.append(("pay:requiredMonthlyVolume", literal(rule["monthly_volume"])))
        level = fraud_level(rule["fraud_percent_min"], rule["fraud_percent_max"])
        if level is not None:
            pairs.append(("pay:requiredMonthlyFraudLevel", literal(level)))
        if rule["is_credit"] is not None:
            pairs.append(("pay:forCreditTransactions", boolean(rule["is_credit"])))
        if rule["intracountry"] is not None:
            pairs.append(("pay:intracountry", boolean(rule["intracountry"])))
        pairs.append(("pay:fixedAmount", decimal(rule["fixed_amount"])))
        pairs.append(("pay:rate", integer(rule["rate"])))
        w.node(iri("fee-rule", rule["ID"]), pairs)

    # monthly figures
    for row in sorted(months, key=lambda r: (r["merchant"], r["year"], r["month"])):
        key = f"{row['merchant']}-{row['year']}-{row['month']:02d}"
        pairs = [
            ("a", "pay:MonthlyFigure"),
            ("rdfs:label", literal(f"{row['merchant']}, {MONTHS[row['month'] - 1]} {row['year']}")),
            ("pay:ofMerchant", iri("merchant", row["merchant"])),
            ("pay:year", integer(row["year"])),
            ("pay:month", integer(row["month"])),
            ("pay:totalVolume", decimal(row["total_volume"], 2)),
            ("pay:fraudVolume", decimal(row["fraud_volume"], 2)),
            ("pay:fraudPercent", decimal(row["fraud_percent"], 4)),
            ("pay:monthlyVolumeCategory", literal(row["monthly_volume"])),
        ]
        w.node(iri("monthly-figure", key), pairs)

    out.append("# ---- data ----")
    out.append("")
    for block in w.blocks:
        out.append(block)
        out.append("")
    sys.stdout.write("\n".join(out).rstrip("\n") + "\n")


def fraud_level(low, high):
    """The DABstep label of a fraud-level range, or None when unbounded on both sides."""
    def pct(value):
        return format(Decimal(repr(value)).normalize(), "f") + "%"

    if low is None and high is None:
        return None
    if low is None:
        return "<" + pct(high)
    if high is None:
        return ">" + pct(low)
    return f"{pct(low)}-{pct(high)}"


if __name__ == "__main__":
    main()
