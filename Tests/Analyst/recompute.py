"""An analyst's recomputation, independent of Countersign's code: the figures of `countersign performance`, `cohorts`,
`report` (install basis) and `reconcile` rebuilt from the streamed export, the networks' claims and spend file and the
exchange-rate file, following docs/metrics.md as written, with Python's Decimal (issue 49's goal).

The trial: the example game with its schema, registered in Europe/Berlin (so days are Berlin days, not UTC), two
networks billing in EUR and USD, re-engagements, installs without a value, and 45 days of installs ending today, so
the period holds closed days and days whose later windows are still arriving. Amounts are compared exactly (the JSON
answers carry every digit); ratios to the places the report prints.

Usage: recompute.py BINARY_DIR   (exit 1 and every difference printed when a figure disagrees)
"""
import csv
import datetime
import io
import json
import os
import subprocess
import sys
import tempfile
from collections import defaultdict
from decimal import ROUND_HALF_EVEN, Decimal
from zoneinfo import ZoneInfo

APP = "1108187390"
ZONE = ZoneInfo("Europe/Berlin")
MICRO = Decimal(1_000_000)


def run(binary, *arguments):
    """What a countersign command prints (it must exit 0)."""
    done = subprocess.run([binary, *arguments], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"recompute: countersign {' '.join(arguments)} exited {done.returncode}: {done.stderr.strip()}")
    return done.stdout


def rounded(value, places):
    """`value` as the report prints a ratio: `places` decimals (halves to even either way; a tie is checked both ways)."""
    return value.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_EVEN)


def main():
    binary = os.path.join(os.path.abspath(sys.argv[1]), "countersign")
    checkout = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    work = tempfile.mkdtemp(prefix="countersign-analyst-")
    os.environ["COUNTERSIGN_DATABASE"] = os.path.join(work, "trial.sqlite")
    run(binary, "keys", "generate", "--out", os.path.join(work, "key"))
    run(binary, "schema", "upload", os.path.join(checkout, "examples/schemas/game.json"))
    run(binary, "apps", "set", APP, "--name", "Game", "--time-zone", "Europe/Berlin", "--currency", "USD")
    claims = os.path.join(work, "claims.csv")
    run(binary, "simulate", "--signing-key", os.path.join(work, "key/private-key.pem"), "--app", APP, "--days", "45", "--seed", "7",
        "--ad-network", "example123.skadnetwork=EUR", "--ad-network", "example.adattributionkit=USD", "--claims-out", claims)
    run(binary, "spend", "import", claims)
    today = datetime.datetime.now(datetime.timezone.utc).astimezone(ZONE).date()
    first, end = today - datetime.timedelta(days=45), today + datetime.timedelta(days=1)
    # A rate every fifth day, so most days take the latest earlier one.
    rates = {first + datetime.timedelta(days=day): Decimal("1.05") + Decimal(day) / Decimal(1000) for day in range(-5, 50, 5)}
    rates_file = os.path.join(work, "rates.csv")
    with open(rates_file, "w") as file:
        file.write("date,from,to,rate\n" + "".join(f"{day},EUR,USD,{rate}\n" for day, rate in sorted(rates.items())))
    run(binary, "spend", "rates", rates_file)

    def rate_on(day):
        return rates[max(known for known in rates if known <= day)]

    # The export: every counted postback, every column (docs/sql.md), whatever its day.
    figures = defaultdict(lambda: defaultdict(Decimal))
    report = defaultdict(lambda: defaultdict(Decimal))
    exported = list(csv.DictReader(io.StringIO(run(binary, "export", "--format", "csv", "--app", APP))))
    for row in exported:
        if row["countable"] != "1":
            continue
        installed = datetime.datetime.fromisoformat(row["estimated_install_at"].replace("Z", "+00:00")).astimezone(ZONE).date()
        if not first <= installed < end:
            continue
        key = (row["ad_network_id"], installed.isoformat())
        cell, reported = figures[key], report[key]
        klass, first_window, won = row["conversion_class"], row["conversion_window"] == "0", row["did_win"] == "1"
        has_value = row["conversion_value_unsigned"] != "" or row["coarse_value_unsigned"] != ""
        revenue = None
        if row["revenue_min_micros"] != "":
            revenue = (Decimal(row["revenue_min_micros"]) + Decimal(row["revenue_max_micros"])) / 2 / MICRO
        reported["postbacks"] += 1
        if klass == "install" and first_window and won:
            cell["installs"] += 1
            reported["installs"] += 1
            cell["installs_with_value" if has_value else "installs_without_value"] += 1
        if klass == "re-engagement" and first_window and won:
            cell["re_engagements"] += 1
        if revenue is not None:
            reported["revenue_mid"] += revenue
            if klass == "install":
                cell["revenue_mid"] += revenue
                cell[f"revenue_mid_window_{row['conversion_window']}"] += revenue
            elif klass == "re-engagement":
                cell["re_engagement_revenue_mid"] += revenue
    # The networks' report: claims and spend on their own day, spend in USD at the rate of its day.
    with open(claims, newline="") as file:
        for row in csv.DictReader(file):
            day = datetime.date.fromisoformat(row["date"])
            if not first <= day < end or row["app"] != APP:
                continue
            cell = figures[(row["ad_network"], row["date"])]
            cell["claimed_installs"] += Decimal(row["installs"])
            cell["spend"] += Decimal(row["spend"]) * (rate_on(day) if row["currency"] == "EUR" else 1)
            cell["has_spend"] = Decimal(1)

    problems = []
    answer = json.loads(run(binary, "performance", "--app", APP, "--by", "ad_network,day", "--from", first.isoformat(), "--to", end.isoformat(),
                            "--currency", "USD", "--format", "json"), parse_float=Decimal)
    seen = set()
    for row in answer["rows"]:
        key = (row["ad_network"], row["day"])
        seen.add(key)
        mine = figures.get(key, {})
        for name in ["installs", "re_engagements", "installs_with_value", "installs_without_value", "revenue_mid", "revenue_mid_window_0",
                     "revenue_mid_window_1", "revenue_mid_window_2", "re_engagement_revenue_mid"]:
            if Decimal(row[name] or 0) != mine.get(name, Decimal(0)):
                problems.append(f"performance {key} {name}: reported {row[name]}, recomputed {mine.get(name, 0)}")
        if mine.get("has_spend"):
            if Decimal(row["spend"]) != mine["spend"] or Decimal(row["claimed_installs"]) != mine["claimed_installs"]:
                problems.append(f"performance {key} spend/claims: reported {row['spend']}/{row['claimed_installs']}, recomputed {mine['spend']}/{mine['claimed_installs']}")
            if mine["spend"] > 0:
                roas = mine.get("revenue_mid", Decimal(0)) / mine["spend"]
                if row["roas_mid"] is None or abs(Decimal(row["roas_mid"]) - roas) > Decimal("0.00005"):
                    problems.append(f"performance {key} roas_mid: reported {row['roas_mid']}, recomputed {roas}")
            if mine.get("installs"):
                ecpi = mine["spend"] / mine["installs"]
                if row["ecpi"] is None or abs(Decimal(row["ecpi"]) - ecpi) > Decimal("0.0000005"):
                    problems.append(f"performance {key} ecpi: reported {row['ecpi']}, recomputed {ecpi}")
        elif row["spend"] is not None:
            problems.append(f"performance {key}: spend {row['spend']} where the file has none")
    for key, mine in figures.items():
        if key not in seen and (mine.get("installs") or mine.get("revenue_mid") or mine.get("has_spend")):
            problems.append(f"performance: no row for {key}, recomputed {dict(mine)}")

    # The report on the install basis: postbacks, installs and revenue of every counted postback per network and day.
    listed = json.loads(run(binary, "report", "--app", APP, "--by", "ad_network,day", "--basis", "install", "--from", first.isoformat(),
                            "--to", end.isoformat(), "--format", "json"), parse_float=Decimal)
    totals = defaultdict(lambda: defaultdict(Decimal))
    for row in listed["rows"]:
        cell = totals[(row["ad_network"], row["day"])]
        for name in ["postbacks", "installs", "revenue_mid"]:
            cell[name] += Decimal(row[name] or 0)
    for key in set(totals) | set(report):
        for name in ["postbacks", "installs", "revenue_mid"]:
            if totals[key][name] != report[key][name]:
                problems.append(f"report {key} {name}: reported {totals[key][name]}, recomputed {report[key][name]}")

    # Cohorts by network and ISO week of the install day (Berlin): installs, spend on the week's days, and each point
    # from the weeks whose window has closed (84, 252, 924 hours after the row's last day ends).
    now = datetime.datetime.now(datetime.timezone.utc)
    weeks = defaultdict(lambda: defaultdict(Decimal))
    last_day = {}
    for (network, day), cell in figures.items():
        date = datetime.date.fromisoformat(day)
        year, week, _ = date.isocalendar()
        key = (network, f"{year}-W{week:02d}")
        for name in ["installs", "spend", "revenue_mid_window_0", "revenue_mid_window_1", "revenue_mid_window_2"]:
            weeks[key][name] += cell.get(name, Decimal(0))
        sunday = date + datetime.timedelta(days=6 - date.weekday())
        last_day[key] = min(sunday, end - datetime.timedelta(days=1))
    curves = json.loads(run(binary, "cohorts", "--app", APP, "--by", "ad_network,week", "--from", first.isoformat(), "--to", end.isoformat(),
                            "--currency", "USD", "--format", "json"), parse_float=Decimal)
    closed_rows = 0
    for row in curves["rows"]:
        key = (row["ad_network"], row["week"])
        mine = weeks.get(key, defaultdict(Decimal))
        if Decimal(row["installs"]) != mine["installs"] or (row["spend"] is not None and Decimal(row["spend"]) != mine["spend"]):
            problems.append(f"cohorts {key}: installs/spend reported {row['installs']}/{row['spend']}, recomputed {mine['installs']}/{mine['spend']}")
        ends = datetime.datetime.combine(last_day.get(key, end) + datetime.timedelta(days=1), datetime.time(), ZONE)
        revenue = Decimal(0)
        for point, window, hours in [("d2", 0, 84), ("d7", 1, 252), ("d35", 2, 924)]:
            revenue += mine[f"revenue_mid_window_{window}"]
            closed = now >= ends + datetime.timedelta(hours=hours)
            installs = mine["installs"] if closed else Decimal(0)
            if Decimal(row[f"cohort_installs_{point}"]) != installs:
                problems.append(f"cohorts {key} cohort_installs_{point}: reported {row[f'cohort_installs_{point}']}, recomputed {installs}")
            for name, whole, places in [(f"revenue_per_install_{point}", installs, 6), (f"roas_{point}", mine["spend"] if closed else 0, 4)]:
                expected = revenue / whole if whole else None
                shown = row[name]
                if (expected is None) != (shown is None) or (expected is not None and abs(Decimal(shown) - expected) > Decimal(5).scaleb(-places - 1)):
                    problems.append(f"cohorts {key} {name}: reported {shown}, recomputed {expected}")
            closed_rows += closed and point == "d35" and installs > 0

    # Reconciliation of one network's claimed identifiers: every other install it drove, and three it never sent.
    network = "example.adattributionkit"
    everything = list(csv.DictReader(io.StringIO(run(binary, "export", "--format", "csv", "--app", APP, "--include-uncounted"))))
    verified = [row for row in everything if row["outcome"] == "verified" and row["ad_network_id"] == network]
    def received_day(row):
        return datetime.datetime.fromisoformat(row["received_at"].replace("Z", "+00:00")).astimezone(ZONE).date()
    window = (end - datetime.timedelta(days=20), end)
    installs_in_range = sorted({row["postback_identifier"] for row in verified if window[0] <= received_day(row) < window[1]
                                and row["conversion_class"] == "install" and row["did_win"] == "1" and row["conversion_window"] == "0"})
    claimed_ids = installs_in_range[::2] + [f"00000000-0000-4000-8000-00000000000{index}" for index in range(3)]
    stored = defaultdict(lambda: [0, 0])
    for row in verified:
        stored[row["postback_identifier"].lower()][0] += 1
        stored[row["postback_identifier"].lower()][1] += row["countable"] == "1"
    listing = os.path.join(work, "claimed.txt")
    with open(listing, "w") as file:
        file.write("\n".join(claimed_ids) + "\n")
    answer_rows = json.loads(run(binary, "reconcile", listing, "--app", APP, "--ad-network", network, "--from", window[0].isoformat(), "--to",
                                 window[1].isoformat(), "--unclaimed", "installs", "--format", "json"))["rows"]
    reported = {(row["identifier"].lower(), row["status"]): (row["postbacks"], row["counted"]) for row in answer_rows}
    expected = {}
    for identifier in claimed_ids:
        found = stored.get(identifier.lower())
        expected[(identifier.lower(), "verified" if found else "unknown")] = tuple(found) if found else (0, 0)
    for identifier in installs_in_range[1::2]:
        expected[(identifier.lower(), "not_claimed")] = (1, 1)
    if reported != expected:
        differ = sorted(set(reported.items()) ^ set(expected.items()))[:10]
        problems.append(f"reconcile: {len(reported)} rows reported, {len(expected)} recomputed; differing: {differ}")

    days = len({key[1] for key in figures})
    young = sum(1 for row in answer["rows"] if row["window_0_maturity"] != "closed")
    installs = sum(cell.get("installs", 0) for cell in figures.values())
    if problems or installs < 500 or young == 0 or closed_rows == 0 or len(installs_in_range) < 20:
        print("\n".join(problems[:40]) or f"recompute: the trial is too small to judge ({installs} installs, {young} young rows)", file=sys.stderr)
        sys.exit(1)
    print(f"analyst recomputation: performance, cohorts, report and reconcile agree: {len(answer['rows'])} performance rows over {days} "
          f"Berlin days ({int(installs)} installs, {young} rows still maturing, spend in EUR converted at {len(rates)} rates), "
          f"{len(curves['rows'])} cohort rows, {len(expected)} identifiers reconciled")


if __name__ == "__main__":
    main()
