"""What the dashboard's browser test runs on: a live server filled by `countersign simulate`, a headless Chromium
opened on its pages, and the check that counts and reports each finding (dashboard_test.py uses them).
"""
import base64
import csv
import datetime
import io
import json
import re
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BINARY = os.path.abspath(sys.argv[1])
SHOTS = os.path.abspath(sys.argv[2])
USD_APP, EUR_APP = "1108187390", "525463029"
FORMULA = "=2+3 Ads"
MARKUP = "<img src=x onerror=alert(1)>"
checks = 0  # how many checks passed so far (check() counts them)


def check(condition, message):
    """Counts a passed check; stops the run with `message` on a failed one."""
    global checks
    if not condition:
        raise AssertionError(message)
    checks += 1


def countersign(*arguments):
    return subprocess.run([BINARY, *arguments], check=True, capture_output=True, text=True).stdout


FORGED_APP = "999000111"


def forged_postback(app):
    """An AdAttributionKit postback for `app` under a kid nobody pinned, with a made-up signature."""
    def encode(data):
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()
    header = encode(json.dumps({"kid": "forger/1", "alg": "ES256"}).encode())
    payload = encode(json.dumps({
        "impression-type": "app-impression", "ad-network-identifier": "example.adattributionkit", "source-identifier": "1234",
        "advertised-item-identifier": int(app), "conversion-type": "download", "did-win": True, "postback-sequence-index": 0,
        "postback-identifier": "5E1D1C4E-0000-4000-8000-00000000F0F0", "publisher-item-identifier": 1,
    }).encode())
    return json.dumps({"jws-string": f"{header}.{payload}.{encode(os.urandom(64))}", "ad-interaction-type": "click"}).encode()


class Server:
    """A live `countersign serve` on a fresh SQLite file, with an API key, schemas, names and simulated traffic."""

    def __init__(self, work):
        self.work = work
        countersign("keys", "generate", "--out", f"{work}/key")
        countersign("keys", "generate", "--out", f"{work}/stranger")
        self.key = json.loads(countersign("apikey", "create", "--name", "browser", "--database", f"{work}/db.sqlite"))["key"]
        self.admin = json.loads(countersign("apikey", "create", "--name", "admin", "--scope", "admin", "--database", f"{work}/db.sqlite"))["key"]
        self.process = subprocess.Popen(
            [BINARY, "serve", "--port", "0", "--database", f"{work}/db.sqlite", "--keys-dir", f"{ROOT}/keys",
             "--key", f"countersign-simulator/0={work}/key/public-key.pem", "--log-level", "error",
             # Apple's AdServices API is out of reach: tokens stay queued, retried against a closed port.
             "--adservices-url", "http://127.0.0.1:9/", "--adservices-backoff", "3600"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.process.stdout.readline()
        check(line.startswith("listening on "), f"the server did not start: {line!r} {self.process.stderr.read() if self.process.poll() is not None else ''}")
        self.url = line.split()[-1].rstrip("/")

    def api(self, path, parameters=None, method="GET", body=None, key=None):
        url = f"{self.url}/v1/{path}" + ("?" + urllib.parse.urlencode(parameters) if parameters else "")
        request = urllib.request.Request(url, method=method, data=body, headers={"Authorization": f"Bearer {key or self.key}"})
        with urllib.request.urlopen(request) as response:
            return json.loads(response.read() or b"null")

    def fill(self):
        # The apps registered, the game's copies coming to this server's host (the simulator posts to 127.0.0.1), the
        # subscription app's to a domain nothing arrives at.
        copy_domains = {"game": "127.0.0.1", "subscription": "copies.example"}
        for name in ("game", "subscription", "shop"):
            with open(f"{ROOT}/examples/schemas/{name}.json", "rb") as file:
                document = file.read()
            app = json.loads(document)["app"]
            zone = {"time_zone": "Europe/Berlin"} if name == "shop" else {}
            self.api(f"apps/{app}", method="PUT", body=json.dumps({"name": name.title(), "copy_domain": copy_domains.get(name), **zone}).encode(), key=self.admin)
            self.api(f"schemas/{app}", method="PUT", body=document)
        self.api("ad-networks/example.adattributionkit", method="PUT", body=b'{"name": "Example AAK Network"}')
        self.api(f"names/{USD_APP}/example.adattributionkit/campaign/12", method="PUT", body=b'{"name": "Spring sale"}')
        # Names are whatever people type: markup must show as text, a formula must stay text in a CSV.
        self.api("ad-networks/example.skadnetwork", method="PUT", body=json.dumps({"name": FORMULA}).encode())
        self.api(f"names/{EUR_APP}/example.skadnetwork/campaign/10", method="PUT", body=json.dumps({"name": MARKUP}).encode())
        # A month of history for the two apps, written as a trial into the server's database with the claims and spend
        # the networks report for it; then today's traffic over HTTP, copies and all.
        countersign("simulate", "--days", "60", "--app", USD_APP, "--app", EUR_APP, "--seed", "5", "--installs-per-day", "30",
                    "--signing-key", f"{self.work}/key/private-key.pem", "--database", f"{self.work}/db.sqlite", "--claims-out", f"{self.work}/claims.csv")
        countersign("simulate", "--count", "500", "--seed", "5", "--signing-key", f"{self.work}/key/private-key.pem", "--url", self.url)
        # Signed with a key the server does not know: AAK ones are kept unverifiable, SKAN ones rejected as forged.
        countersign("simulate", "--count", "40", "--seed", "6", "--distinct", "--signing-key", f"{self.work}/stranger/private-key.pem",
                    "--kid", "unknown-key/7", "--url", self.url)
        # A forgery naming an app nobody serves (anyone can sign with a kid nobody pinned): kept unverifiable, and it must
        # not reach the dashboard's app suggestions.
        urllib.request.urlopen(urllib.request.Request(f"{self.url}/postbacks", method="POST", data=forged_postback(FORGED_APP))).read()
        with open(f"{self.work}/claims.csv", "rb") as file:
            self.api("spend", {"file_name": "claims.csv"}, method="POST", body=file.read())
        first_day = min(row["day"] for row in self.api("performance", {"by": "day"})["rows"])
        self.api("rates", method="POST", body=f"date,from,to,rate\n{first_day},EUR,USD,1.08\n".encode())
        for _ in range(3):
            token = urllib.request.Request(f"{self.url}/v1/adservices/tokens", method="POST", data=base64.b64encode(os.urandom(120)),
                                           headers={"Content-Type": "text/plain"})
            urllib.request.urlopen(token).read()

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=30)


class Dashboard:
    """The browser: headless Chromium at 1400 px, console log kept, downloads into the work directory."""

    def __init__(self, server, downloads):
        self.server = server
        options = Options()
        options.binary_location = "/usr/bin/chromium"
        for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,1000", "--lang=en-US"):
            options.add_argument(argument)
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        options.add_experimental_option("prefs", {"download.default_directory": downloads, "download.prompt_for_download": False})
        self.driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
        self.wait = WebDriverWait(self.driver, 30)

    def open(self, query=""):
        self.driver.get(f"{self.server.url}/dashboard{query}")

    def rendered(self, page):
        """Waits until `page` has drawn everything it fetched."""
        self.wait.until(lambda driver: driver.execute_script(
            "const main = document.getElementById('page'); return main.dataset.rendered === arguments[0] && main.getAttribute('aria-busy') === 'false'", page))

    def chart(self, id):
        """A chart's labels and datasets as Chart.js holds them."""
        return self.driver.execute_script(
            "const chart = Chart.getChart(arguments[0]); return { labels: chart.data.labels, datasets: chart.data.datasets.map(d => ({ label: d.label, data: d.data })) }", id)

    def table(self, id):
        """A table's rows as {column: raw value} from the cells' data-value."""
        return self.driver.execute_script("""
            return [...document.querySelectorAll('#' + CSS.escape(arguments[0]) + ' tbody tr')].filter(r => r.querySelector('[data-column]'))
              .map(r => Object.fromEntries([...r.querySelectorAll('[data-column]')].map(c => [c.dataset.column, c.dataset.value])))""", id)

    def tile(self, id):
        return self.driver.execute_script("return document.querySelector('[data-kpi=\"' + arguments[0] + '\"]').dataset.value", id)

    def console_errors(self):
        return [entry for entry in self.driver.get_log("browser") if entry["level"] == "SEVERE"]

    def sideways(self):
        """The tables that scroll sideways in their box at the current width."""
        return self.driver.execute_script(
            "return [...document.querySelectorAll('.table-wrap')].filter(w => w.scrollWidth > w.clientWidth + 1).map(w => w.querySelector('table').id)")

    def screenshot(self, name):
        """The whole page (up to 4,000 px tall) at the current width; at 1400 px no table may scroll sideways."""
        size = self.driver.get_window_size()
        if size["width"] >= 1400:
            check(not self.sideways(), f"{name}: tables scroll sideways at {size['width']} px: {self.sideways()}")
        height = self.driver.execute_script("return document.documentElement.scrollHeight")
        self.driver.set_window_size(size["width"], min(max(height + 140, size["height"]), 4000))
        time.sleep(0.3)
        self.driver.save_screenshot(os.path.join(SHOTS, f"{name}.png"))
        self.driver.set_window_size(size["width"], size["height"])


def number(value):
    return float(value) if value not in (None, "") else 0.0


def same_rows(shown, answered, keys, what):
    """The table shows exactly the API's rows for `keys` (as text, order aside)."""
    def text(value):
        if value is None or value == "":
            return ""
        try:
            return repr(float(value))  # 2120.00 in JSON, 2120 in the page: the same number
        except (TypeError, ValueError):
            return str(value)
    left = sorted(tuple(text(row.get(key)) for key in keys) for row in shown)
    right = sorted(tuple(text(row.get(key)) for key in keys) for row in answered)
    check(left == right, f"{what}: the table shows {left[:5]}... but the API answers {right[:5]}...")
