"""The dashboard in a real headless Chromium against a live server filled by `countersign simulate`.

Checks that every page's charts and tables show what the /v1 API answers for the same filters, that a filter change
changes the URL and the numbers, that a wrong key shows the error, that a postback looked up by id shows its copies,
that a table downloads as CSV, that the phone-width layout does not overflow, and that no page logs a console error.
Writes a screenshot of every page. Usage: dashboard_test.py <countersign binary> <screenshot directory>
"""

import csv
import datetime
import json
import re
import os
import shutil
import tempfile
import time
import urllib.parse

from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

import dashboard_harness as harness
from dashboard_harness import ROOT, SHOTS, USD_APP, EUR_APP, FORGED_APP, FORMULA, MARKUP, Dashboard, Server, check, countersign, number, same_rows


def main():
    os.makedirs(SHOTS, exist_ok=True)
    work = tempfile.mkdtemp(prefix="countersign-browser-")
    server = Server(work)
    browser = None
    try:
        server.fill()
        browser = Dashboard(server, f"{work}/downloads")
        driver = browser.driver

        # A wrong key: a clear message, the sign-in form again.
        browser.open()
        browser.wait.until(lambda d: d.find_element(By.ID, "sign-in").is_displayed())
        check(not driver.find_element(By.ID, "filters").is_displayed(), "the filter bar is hidden before signing in")
        browser.screenshot("sign-in")
        driver.find_element(By.NAME, "key").send_keys("cs_not-a-real-key")
        driver.find_element(By.CSS_SELECTOR, "#sign-in button").click()
        browser.wait.until(lambda d: d.find_element(By.ID, "notice").is_displayed())
        notice = driver.find_element(By.ID, "notice").text
        check("refused" in notice and "invalid_api_key" in notice, f"a wrong key shows {notice!r}")
        check(driver.find_element(By.ID, "sign-in").is_displayed(), "the sign-in form is shown again after a wrong key")
        browser.screenshot("wrong-key")
        driver.get_log("browser")  # the refused request logs a 401, which is expected here

        # Signed in: the overview equals /v1/intake and /v1/reports on its basis, the estimated install day.
        driver.find_element(By.NAME, "key").send_keys(server.key)
        driver.find_element(By.CSS_SELECTOR, "#sign-in button").click()
        browser.rendered("overview")
        check("Days by estimated install day" in driver.find_element(By.CSS_SELECTOR, "section[aria-label=Totals] .note").text, "the overview names its day basis")
        by_day = server.api("reports", {"by": "day,protocol", "basis": "install"})["rows"]
        intake = server.api("intake", {"by": "day,status"})["rows"]
        check(number(browser.tile("counted")) == sum(row["postbacks"] for row in by_day), "the counted tile equals the report's postbacks")
        check(number(browser.tile("installs")) == sum(row["installs"] for row in by_day), "the installs tile equals the report's installs")
        outcomes = browser.chart("chart-outcomes")
        for dataset in outcomes["datasets"]:
            status = {"Counted": "counted", "Duplicate": "duplicate", "Replay": "replay", "Unverifiable": "unverifiable",
                      "Rejected": "rejected", "Development": "development", "Not counted": "not_counted", "Unverified copy": "unverified_copy"}[dataset["label"]]
            check(sum(dataset["data"]) == sum(row["postbacks"] for row in intake if row["status"] == status), f"the outcomes chart's {status} equals /v1/intake")
        check({"counted", "duplicate", "replay", "unverifiable", "rejected"} <= {row["status"] for row in intake}, "the traffic has every outcome")
        same_rows(browser.table("outcomes"), intake, ["day", "status", "postbacks"], "outcomes table")
        same_rows(browser.table("rejected"), server.api("intake", {"status": "rejected", "by": "reason"})["rows"], ["reason", "postbacks"], "rejected table")
        protocols = browser.chart("chart-protocols")
        check(sum(sum(dataset["data"]) for dataset in protocols["datasets"]) == sum(row["postbacks"] for row in by_day), "the protocol chart adds up to the report")
        tiers = server.api("reports", {"by": "tier", "basis": "install"})["rows"]
        check(sum(browser.chart("chart-tiers")["datasets"][0]["data"]) == sum(row["postbacks"] for row in tiers), "the tier chart adds up to the report")
        shown = driver.find_element(By.CSS_SELECTOR, '[data-kpi="counted"] .value').text
        check("," in shown or len(shown) <= 3, f"counts carry thousands separators: {shown!r}")
        check(not browser.console_errors(), f"console errors on the overview: {browser.console_errors()}")
        browser.screenshot("overview")

        browser.wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "select[name=app] option")) > 1)
        options = {option.get_attribute("value"): option.text for option in driver.find_elements(By.CSS_SELECTOR, "select[name=app] option")}
        check(EUR_APP in options and FORGED_APP not in options, f"the app filter holds apps Apple signed for, never a forger's: {sorted(options)}")
        check(options[EUR_APP] == f"Subscription ({EUR_APP})", f"the app filter shows names: {options[EUR_APP]!r}")
        # The tiles agree with the Performance page for the same filters (finding 10): installs, and revenue of installs.
        performance = server.api("performance", {"by": "ad_network"})["rows"]
        check(number(browser.tile("installs")) == sum(row["installs"] for row in performance) > 0, "the overview's installs are performance's")
        # Revenue of installs per currency equals the report's; in dollars (Money in), revenue, eCPI and ROAS equal the
        # performance report's.
        revenue = {}
        for row in server.api("reports", {"by": "protocol", "type": "install", "basis": "install"})["rows"]:
            if row["currency"]:
                revenue[row["currency"]] = revenue.get(row["currency"], 0) + number(row["revenue_mid"])
        check(len(revenue) == 2, f"revenue in two currencies: {revenue}")
        for code, value in revenue.items():
            check(abs(number(browser.tile(f"revenue_{code}")) - value) < 1e-4, f"the {code} revenue tile equals the report")
        # Days still receiving first-window postbacks are faded on the daily bars, as performance marks them.
        young = {row["day"] for row in server.api("performance", {"by": "day"})["rows"] if row["window_0_maturity"] != "closed"}
        colours = driver.execute_script("const c = Chart.getChart('chart-installs'); return [c.data.labels, c.data.datasets[0].backgroundColor]")
        check(young and {day for day, colour in zip(*colours) if len(colour) == 9 and colour.endswith("55")} == young & set(colours[0]), f"faded days are the young ones: {young}")
        driver.find_element(By.XPATH, "//p[@data-picker='currency']/a[text()='USD']").click()
        browser.wait.until(lambda d: "currency=USD" in d.current_url)
        browser.rendered("overview")
        dollars = server.api("performance", {"currency": "USD"})["rows"][0]
        check(number(browser.tile("roas_USD")) == number(dollars["roas_mid"]) and number(browser.tile("ecpi_USD")) == number(dollars["ecpi"]),
              "ROAS and eCPI in dollars equal the performance report's")
        check(abs(number(browser.tile("revenue_USD")) - number(dollars["revenue_mid"])) < 1e-4, "revenue in dollars equals the performance report's")
        browser.screenshot("overview-dollars")
        browser.open("")
        browser.rendered("overview")

        # A filter: the URL holds it, the numbers follow it.
        before = number(browser.tile("counted"))
        Select(driver.find_element(By.NAME, "app")).select_by_value(EUR_APP)
        driver.find_element(By.CSS_SELECTOR, "#filters button[type=submit]").click()
        browser.wait.until(lambda d: f"app={EUR_APP}" in d.current_url)
        browser.rendered("overview")
        filtered = server.api("reports", {"by": "day,protocol", "app": EUR_APP, "basis": "install"})["rows"]
        after = number(browser.tile("counted"))
        check(after == sum(row["postbacks"] for row in filtered) and after != before, f"filtering by app changes the count from {before} to {after}")
        check({row["currency"] for row in browser.table("protocols")} == {"EUR"}, "the EUR app's rows are in EUR")
        # The URL alone reproduces the view.
        link = driver.current_url
        browser.open("")
        driver.get(link)
        browser.rendered("overview")
        check(number(browser.tile("counted")) == after, "opening the link again shows the same numbers")

        # Date presets: the days they name, the last one included, sent to the API with its exclusive end; every
        # figure against the same number of days before.
        today = datetime.datetime.now(datetime.timezone.utc).date()
        def day(offset):
            return (today + datetime.timedelta(days=offset)).isoformat()
        for preset, first, last in [("7d", day(-6), day(0)), ("yesterday", day(-1), day(-1)), ("30d", day(-29), day(0))]:
            Select(driver.find_element(By.NAME, "range")).select_by_value(preset)
            check(driver.find_element(By.NAME, "from").get_attribute("value") == first and driver.find_element(By.NAME, "to").get_attribute("value") == last,
                  f"{preset} shows {first} to {last}")
            driver.find_element(By.CSS_SELECTOR, "#filters button[type=submit]").click()
            browser.wait.until(lambda d: f"range={preset}" in d.current_url)
            browser.rendered("overview")
            end = (datetime.date.fromisoformat(last) + datetime.timedelta(days=1)).isoformat()
            shown = server.api("reports", {"by": "protocol", "app": EUR_APP, "from": first, "to": end, "basis": "install"})["rows"]
            check(number(browser.tile("installs")) == sum(row["installs"] for row in shown), f"{preset}: installs from {first} to {end} (exclusive)")
            # The same days on Performance: its installs are the tile's (a wrong basis gives other days' installs).
            performed = server.api("performance", {"by": "ad_network", "app": EUR_APP, "from": first, "to": end})["rows"]
            check(number(browser.tile("installs")) == sum(row["installs"] for row in performed), f"{preset}: the installs tile is performance's")
            length = (datetime.date.fromisoformat(end) - datetime.date.fromisoformat(first)).days
            earlier = (datetime.date.fromisoformat(first) - datetime.timedelta(days=length)).isoformat()
            previous = server.api("reports", {"by": "protocol", "app": EUR_APP, "from": earlier, "to": first, "basis": "install"})["rows"]
            shown_previous = driver.execute_script("return document.querySelector('[data-kpi=\"installs\"]').dataset.previous")
            check(number(shown_previous) == sum(row["installs"] for row in previous), f"{preset}: the previous period is {earlier} to {first}")
        check(number(browser.tile("installs")) > 0, "the last 30 days have installs")
        # Changes read the good way: a rise in duplicates is worse, a rise in installs better.
        for kpi, lower_is_better in [("installs", False), ("duplicates", True)]:
            value, before, shown = driver.execute_script(
                "const t = document.querySelector('[data-kpi=\"' + arguments[0] + '\"]'), c = t.querySelector('.change'); return [t.dataset.value, t.dataset.previous, c ? c.className : '']", kpi)
            if shown and number(value) != number(before):
                worse = (number(value) > number(before)) == lower_is_better
                check(("worse" if worse else "better") in shown, f"{kpi} from {before} to {value} reads as {'worse' if worse else 'better'}: {shown}")
        browser.screenshot("overview-30-days")
        # A custom day from = to shows that one day: ten days back, inside the simulated history whatever the hour (the
        # last few days' installs by install day depend on the time of day the test runs).
        Select(driver.find_element(By.NAME, "range")).select_by_value("custom")
        for name, value in [("from", day(-10)), ("to", day(-10))]:
            driver.execute_script("arguments[0].value = arguments[1]; arguments[0].dispatchEvent(new Event('input'))", driver.find_element(By.NAME, name), value)
        driver.find_element(By.CSS_SELECTOR, "#filters button[type=submit]").click()
        browser.wait.until(lambda d: "range=custom" in d.current_url and f"to={day(-10)}" in d.current_url)
        browser.rendered("overview")
        one = server.api("reports", {"by": "protocol", "app": EUR_APP, "from": day(-10), "to": day(-9), "basis": "install"})["rows"]
        check(number(browser.tile("installs")) == sum(row["installs"] for row in one) > 0, f"a single day shows its installs: {browser.tile('installs')} {one}")
        # All time again after a preset: no days, the whole history.
        Select(driver.find_element(By.NAME, "range")).select_by_value("")
        check(driver.find_element(By.NAME, "from").get_attribute("value") == "" == driver.find_element(By.NAME, "to").get_attribute("value"),
              "all time shows no days")
        driver.find_element(By.CSS_SELECTOR, "#filters button[type=submit]").click()
        browser.wait.until(lambda d: "range=" not in d.current_url and "from=" not in d.current_url)
        browser.rendered("overview")
        everything = server.api("reports", {"by": "protocol", "app": EUR_APP, "basis": "install"})["rows"]
        check(number(browser.tile("installs")) == sum(row["installs"] for row in everything), "all time after a preset shows the whole history")
        browser.open("")
        browser.rendered("overview")

        # Campaigns, with names and revenue per currency; sorting is in the URL; the table downloads as CSV.
        browser.open("?page=campaigns")
        browser.rendered("campaigns")
        campaigns = server.api("reports", {"by": "app_name,ad_network,ad_network_name,campaign,campaign_name", "basis": "install"})["rows"]
        same_rows(browser.table("campaigns"), campaigns, ["app_name", "ad_network_name", "campaign_name", "currency", "postbacks", "installs", "revenue_min", "revenue_max"], "campaigns table")
        default_order = [number(row["installs"]) for row in browser.table("campaigns")]
        check(default_order == sorted(default_order, reverse=True), "campaigns are listed most installs first")
        leaders = browser.chart("chart-top-installs")
        check(leaders["datasets"][0]["data"] == sorted((number(row["installs"]) for row in campaigns), reverse=True)[:len(leaders["labels"])],
              "the top campaigns chart shows the most installs, one bar each")
        for currency in {row["currency"] for row in campaigns if row["currency"]}:
            bars = browser.chart(f"chart-revenue-{currency}")["datasets"][0]["data"]
            check(len(bars) <= 10 and bars == sorted(bars, reverse=True), f"{currency} revenue has its own chart, largest first")
        browser.screenshot("campaigns")
        names = {row["ad_network_name"] for row in browser.table("campaigns")}
        check("Example AAK Network" in names, f"the registry's network name is shown: {names}")
        check("Spring sale" in {row["campaign_name"] for row in browser.table("campaigns")}, "a registered campaign name is shown")
        cells = [cell.text for cell in driver.find_elements(By.CSS_SELECTOR, '#campaigns td[data-column="campaign_name"]')]
        check(MARKUP in cells and not driver.find_elements(By.CSS_SELECTOR, "#campaigns img"), "markup in a name is shown as text, never run")
        windows = server.api("reports", {"by": "window,value_kind", "basis": "install"})["rows"]
        # Spend and return per campaign, as Performance counts them (finding 13).
        spent = server.api("performance", {"by": "app_name,ad_network,ad_network_name,campaign"})["rows"]
        same_rows(browser.table("campaign-money"), spent, ["app_name", "ad_network_name", "campaign", "currency", "installs", "revenue_mid", "spend", "ecpi", "roas_mid"], "campaign money table")
        check(any(row["spend"] not in (None, "") for row in browser.table("campaign-money")), "a campaign's spend is shown")
        chart = browser.chart("chart-windows")
        check(sum(sum(d["data"]) for d in chart["datasets"]) == sum(row["postbacks"] for row in windows), "the window chart adds up to the report")
        # The campaigns' daily line fades and dashes its young days, as the Overview's bars do.
        points = driver.execute_script("const c = Chart.getChart('chart-campaign-trend'); return [c.data.labels, c.data.datasets[0].pointBackgroundColor]")
        check(young and {day for day, colour in zip(*points) if len(colour) == 9 and colour.endswith("55")} == young & set(points[0]), f"the trend fades the young days: {young}")
        money = driver.find_element(By.CSS_SELECTOR, '#campaigns td[data-column="revenue_max"]').text
        check(money[:1] in "$€" or money.endswith(("$", "€")), f"revenue shows a currency symbol: {money!r}")
        driver.find_element(By.XPATH, "//table[@id='campaigns']//th//button[text()='Postbacks']").click()
        browser.wait.until(lambda d: "sort=campaigns.postbacks.asc" in d.current_url)
        browser.rendered("campaigns")
        sorted_counts = [number(row["postbacks"]) for row in browser.table("campaigns")]
        check(sorted_counts == sorted(sorted_counts), "sorting by postbacks orders the rows")
        driver.find_element(By.XPATH, "//table[@id='campaigns']/ancestor::section//button[text()='Download CSV']").click()
        path = f"{work}/downloads/campaigns.csv"
        for _ in range(100):
            if os.path.exists(path):
                break
            time.sleep(0.1)
        with open(path, newline="") as file:
            downloaded = list(csv.DictReader(file))
        check(all(row["ad_network_name"] != FORMULA for row in downloaded) and any(row["ad_network_name"] == "'" + FORMULA for row in downloaded),
              "a name that looks like a formula is written as text in the CSV")
        for row in downloaded:
            if row["ad_network_name"] == "'" + FORMULA:
                row["ad_network_name"] = FORMULA
        same_rows(downloaded, campaigns, ["app_name", "ad_network_name", "campaign_name", "currency", "postbacks", "revenue_min", "revenue_max"], "campaigns CSV")
        check(not browser.console_errors(), f"console errors on campaigns: {browser.console_errors()}")

        # Conversion values: the fine values of window 0, coarse values per window, the share without a value by tier.
        browser.open("?page=values")
        browser.rendered("values")
        values = server.api("reports", {"by": "window,value_kind,value", "basis": "install"})["rows"]
        fine = browser.chart("chart-fine-values")["datasets"][0]["data"]
        check(len(fine) == 64, "every fine value from 0 to 63 has a bar")
        check(sum(fine) == sum(row["postbacks"] for row in values if row["value_kind"] == "fine" and row["window"] == 0) > 0, "the fine values add up to window 0's")
        coarse = browser.chart("chart-coarse-values")
        check(sum(sum(d["data"]) for d in coarse["datasets"]) == sum(row["postbacks"] for row in values if row["value_kind"] == "coarse"), "the coarse values add up")
        check(not browser.console_errors(), f"console errors on values: {browser.console_errors()}")
        browser.screenshot("values")

        # Events: per day and window, revisions, undefined values.
        browser.open("?page=events")
        browser.rendered("events")
        events = [row for row in server.api("reports", {"by": "day,event", "basis": "install"})["rows"] if row["event"] not in (None, "(no event)")]
        check(not driver.find_elements(By.XPATH, "//table[@id='events-by-day']//td[text()='(no event)']"), "postbacks without an event are not listed as an event")
        same_rows(browser.table("events-by-day"), events, ["day", "event", "currency", "events", "revenue_min", "revenue_max"], "events table")
        check(sum(sum(d["data"]) for d in browser.chart("chart-events")["datasets"]) == sum(row["events"] for row in events), "the events chart adds up")
        bars = driver.execute_script("const c = Chart.getChart('chart-events'); return [c.data.labels, c.data.datasets[0].backgroundColor]")
        check(young & set(bars[0]) and {day for day, colour in zip(*bars) if len(colour) == 9 and colour.endswith("55")} == young & set(bars[0]), f"the events chart fades the young days: {young}")
        revisions = server.api("reports", {"by": "app,schema_revision,decoding", "basis": "install"})["rows"]
        same_rows(browser.table("revisions"), revisions, ["app", "schema_revision", "postbacks"], "revisions table")
        decodings = server.api("reports", {"by": "app,decoding,value_kind,value", "basis": "install"})["rows"]
        check(any(row["decoding"] == "no_event" for row in decodings), "values the schema defines as no event are told apart")
        undefined = [row for row in decodings if row["decoding"] == "undefined_value"]
        same_rows(browser.table("undefined-values"), undefined, ["app", "value", "postbacks"], "undefined values table")
        check(not browser.console_errors(), f"console errors on events: {browser.console_errors()}")
        browser.screenshot("events")

        # Performance: claimed against verified, the gap, spend and return, in each row's currency or in dollars.
        browser.open("?page=performance")
        browser.rendered("performance")
        networks = server.api("performance", {"by": "ad_network,ad_network_name"})["rows"]
        same_rows(browser.table("gap"), networks, ["ad_network_name", "installs", "claimed_installs", "install_gap", "install_ratio", "copies", "forged"], "gap table")
        check(number(browser.tile("installs")) == sum(row["installs"] for row in networks), "the installs tile equals the report")
        young = any(row["window_0_maturity"] != "closed" for row in networks)
        ratio_detail = driver.find_element(By.CSS_SELECTOR, '[data-kpi="install_ratio"]').text
        check(young and "still receive first-window postbacks" in ratio_detail, f"the signed share says it will grow while days are young: {ratio_detail!r}")
        check(number(browser.tile("claimed_installs")) == sum(row["claimed_installs"] or 0 for row in networks) > 0, "the claimed installs tile equals the report")
        claims = browser.chart("chart-claims")
        check(sum(claims["datasets"][1]["data"]) == number(browser.tile("claimed_installs")), "the claims chart adds up to the claimed installs")
        roas = server.api("performance", {"by": "app_name,ad_network,ad_network_name,campaign"})["rows"]
        same_rows(browser.table("roas"), roas, ["app_name", "ad_network_name", "campaign", "currency", "installs", "claimed_installs", "spend", "ecpi", "cpi", "roas_mid", "note"], "return table")
        check(any(row["roas_mid"] not in (None, "") for row in browser.table("roas")), "a return on ad spend is shown")
        # Cohort curves: one line per network, its points the API's, empty where no install week has closed.
        curves = server.api("cohorts", {"by": "app_name,ad_network,ad_network_name"})["rows"]
        drawn = {dataset["label"]: dataset["data"] for dataset in browser.chart("chart-roas")["datasets"]}
        expected = {f'{row["app_name"]} · {row["ad_network_name"]}': [None if row[f"roas_{point}"] is None else float(row[f"roas_{point}"]) for point in ("d2", "d7", "d35")] for row in curves
                    if any(row[f"roas_{point}"] is not None for point in ("d2", "d7", "d35"))}
        check(drawn == expected and any(point is not None for line in drawn.values() for point in line), f"the cohort chart draws the API's curves: {drawn} against {expected}")
        same_rows(browser.table("cohorts"), curves, ["app_name", "ad_network_name", "installs", "cohort_installs_d2", "roas_d2", "cohort_installs_d35", "roas_d35"], "cohort table")
        check(not browser.console_errors(), f"console errors on performance: {browser.console_errors()}")
        browser.screenshot("performance")
        # Drill-down: the verified first-window postbacks of one network, each linked to its lookup.
        driver.find_element(By.XPATH, "//p[@data-picker='postbacks_of']/a[text()='Example AAK Network']").click()
        browser.wait.until(lambda d: "postbacks_of=example.adattributionkit" in d.current_url)
        browser.rendered("performance")
        listed = server.api("conversions", {"ad_network": "example.adattributionkit", "window": "0", "type": "install", "did_win": "true", "limit": 200})["rows"]
        drilled = browser.table("drill")
        check(len(drilled) == len(listed) > 0 and {row["identifier"] for row in drilled} == {row["postback_identifier"] for row in listed},
              "the drill-down lists the network's postbacks")
        check(driver.find_elements(By.CSS_SELECTOR, "#drill a[href*='page=lookup']"), "each postback links to its lookup")
        browser.open("?page=performance")
        browser.rendered("performance")
        driver.find_element(By.XPATH, "//a[text()='USD']").click()
        browser.wait.until(lambda d: "currency=USD" in d.current_url)
        browser.rendered("performance")
        in_dollars = server.api("performance", {"by": "app_name,ad_network,ad_network_name,campaign", "currency": "USD"})["rows"]
        same_rows(browser.table("roas"), in_dollars, ["app_name", "ad_network_name", "campaign", "currency", "spend", "roas_mid"], "return table in dollars")
        check({row["currency"] for row in browser.table("roas") if row["currency"]} == {"USD"}, "every amount is in dollars")

        # Apple Ads: token jobs by state.
        browser.open("?page=apple-ads")
        browser.rendered("apple-ads")
        counts = server.api("adservices/jobs", {"state": "pending,retrying,done,failed", "limit": 1})["counts"]
        chart = browser.chart("chart-jobs")
        check(chart["datasets"][0]["data"] == [counts[state] for state in chart["labels"]], f"the jobs chart {chart} equals {counts}")
        check(sum(counts.values()) == 3, f"three tokens are queued: {counts}")
        check(not browser.console_errors(), f"console errors on Apple Ads: {browser.console_errors()}")
        browser.screenshot("apple-ads")

        # Health: outcomes and reasons, unverifiable postbacks by key id, the server's own metrics.
        browser.open("?page=health")
        browser.rendered("health")
        same_rows(browser.table("reasons"), server.api("intake", {"by": "status,reason"})["rows"], ["status", "reason", "postbacks"], "reasons table")
        waiting = server.api("intake", {"status": "unverifiable", "by": "protocol,version,reason"})["rows"]
        same_rows(browser.table("unverifiable"), waiting, ["protocol", "version", "reason", "postbacks"], "unverifiable table")
        check(any(row["reason"] == "unknown_kid" and row["postbacks"] > 0 for row in waiting), "postbacks under an unknown kid are listed")
        check(number(browser.tile("requests")) >= 540, f"the request counter counts the traffic: {browser.tile('requests')}")
        check(number(browser.tile("received")) == sum(row["postbacks"] for row in server.api("intake", {"by": "status"})["rows"]), "requests received come from the database")
        browser.wait.until(lambda d: browser.tile("rate") != "")
        status = server.api("setup")
        # Networks show their registered names (the reports' ad_network_name), never a bare id when one is registered.
        registered = {network["ad_network_id"]: network["name"] for network in server.api("ad-networks")["ad_networks"]}
        for row in status["rows"]:
            row["ad_network_name"] = registered.get(row["ad_network"], row["ad_network"])
        check(any(row["ad_network"] in registered for row in status["rows"]), f"a network with a registered name arrived: {registered}")
        same_rows(browser.table("setup"), status["rows"], ["app_name", "protocol", "version", "ad_network_name", "channel", "arrivals", "verified", "invalid"], "setup table")
        shown = driver.execute_script("return document.querySelector('#setup-apps tbody [data-column=last_received_at]').textContent")
        check(shown and not re.match(r"\d{4}-\d{2}-\d{2}T", shown) and ":" in shown, f"times show in the viewer's zone, not as ISO text: {shown}")
        copies = {row["app"]: row["copies"] for row in browser.table("setup-apps")}
        check(copies.get(USD_APP) == "Arriving" and copies.get(EUR_APP) == "None arrived", f"the game's copies arrive, the subscription's do not: {copies}")
        check(not browser.console_errors(), f"console errors on health: {browser.console_errors()}")
        browser.screenshot("health")

        # Lookup: a replayed postback shows every copy and what the replay changed.
        replayed = next(row for row in server.api("conversions", {"limit": 10000})["rows"] if row["replays"] > 0)
        identifier = replayed["postback_identifier"]
        answer = server.api(f"postbacks/{urllib.parse.quote(identifier)}")
        browser.open("?page=lookup&id=" + urllib.parse.quote(identifier))
        browser.rendered("lookup")
        # The zone box names the zone a picked app's days are counted in (issue 49, finding 13).
        with open(f"{ROOT}/examples/schemas/shop.json", "rb") as file:
            shop = json.loads(file.read())["app"]
        browser.open(f"?page=overview&app={shop}")
        browser.rendered("overview")
        browser.wait.until(lambda d: d.find_element(By.NAME, "tz").get_attribute("placeholder") == "Europe/Berlin")
        browser.open("?page=overview")
        browser.rendered("overview")
        browser.wait.until(lambda d: d.find_element(By.NAME, "tz").get_attribute("placeholder") == "UTC")
        browser.open("?page=lookup&id=" + urllib.parse.quote(identifier))
        browser.rendered("lookup")
        check(not driver.find_element(By.ID, "filters").is_displayed(), "the lookup page shows no filter bar")
        check(not any("filter" in node.text for node in driver.find_elements(By.CSS_SELECTOR, "#page .empty")), "lookup's empty tables say why, not which filters")
        copies = browser.table("copies-0")
        check(len(copies) == len(answer["postbacks"][0]["copies"]) >= 2, f"every copy is listed: {len(copies)}")
        check(any(row["disposition"] == "replay" and row["unsigned_changes"] for row in copies), "the replay shows its changed unsigned fields")
        check(any(row["value"] == "verified" for row in browser.table("verification-0")), "the stored copy verifies again")
        same_rows(browser.table("events-0"), answer["postbacks"][0]["events"], ["name", "count"], "lookup events")
        check(not browser.console_errors(), f"console errors on lookup: {browser.console_errors()}")
        browser.screenshot("lookup")

        # Every page with nothing to show says so, and what to do, instead of drawing empty axes.
        for page in ("overview", "campaigns", "values", "events", "performance", "health"):
            browser.open(f"?page={page}&ad_network=nothing.example")
            browser.rendered(page)
            check(not browser.console_errors(), f"console errors on an empty {page}: {browser.console_errors()}")
            empties = [element.text for element in driver.find_elements(By.CSS_SELECTOR, ".empty")]
            check(empties and all(empties) and any("Widen the dates" in text for text in empties), f"an empty {page} says what to do: {empties}")
            check(not driver.find_elements(By.CSS_SELECTOR, "canvas"), f"an empty {page} draws no empty chart")
            if page == "overview":
                check(any(text.startswith("Nothing rejected") for text in empties), "an empty table says what its emptiness means")
                browser.screenshot("empty")

        # Phone width: nothing wider than the screen but the tables' own scrolling boxes.
        driver.set_window_size(390, 844)
        browser.open("?page=overview")
        browser.rendered("overview")
        overflow = driver.execute_script("return document.documentElement.scrollWidth - window.innerWidth")
        check(overflow <= 1, f"the overview overflows a phone screen by {overflow} px")
        browser.screenshot("overview-phone")
        check(not browser.console_errors(), f"console errors at phone width: {browser.console_errors()}")

        # A wall screen: a proxy sets the Authorization header on every request (docs/dashboard.md#a-wall-screen), so
        # a tab with no key typed shows the pages at once, with nothing to sign out of; a header the server refuses
        # leaves the sign-in form.
        driver.set_window_size(1400, 1000)
        wall = server.key
        driver.execute_cdp_cmd("Network.enable", {})
        driver.execute_cdp_cmd("Network.setExtraHTTPHeaders", {"headers": {"Authorization": f"Bearer {wall}"}})
        browser.open("?page=overview")
        driver.execute_script("sessionStorage.clear()")
        browser.open("?page=overview")
        browser.rendered("overview")
        check(not driver.find_element(By.ID, "sign-in").is_displayed() and not driver.find_element(By.ID, "sign-out").is_displayed(),
              "signed in by the proxy: no form, nothing to sign out of")
        check(number(browser.tile("installs")) == sum(row["installs"] for row in server.api("reports", {"by": "protocol", "basis": "install"})["rows"]),
              "the wall screen shows the figures")
        check(not browser.console_errors(), f"console errors on the wall screen: {browser.console_errors()}")
        driver.execute_cdp_cmd("Network.setExtraHTTPHeaders", {"headers": {"Authorization": "Bearer cs_not-a-real-key"}})
        browser.open("?page=overview")
        browser.wait.until(lambda d: d.find_element(By.ID, "sign-in").is_displayed())
        driver.get_log("browser")  # the refused probe logs a 401, which is expected here
        driver.execute_cdp_cmd("Network.setExtraHTTPHeaders", {"headers": {}})
    finally:
        if browser:
            browser.driver.quit()
        server.stop()
        shutil.rmtree(work, ignore_errors=True)
    print(f"dashboard browser test: {harness.checks} checks passed; screenshots in {SHOTS}")


if __name__ == "__main__":
    main()
