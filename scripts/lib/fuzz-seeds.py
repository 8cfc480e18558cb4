"""Writes the fuzz seed corpora from the test fixtures: postbacks, JWS strings, SKAN bodies, schemas, iAd dictionaries,
revenue files and Info.plists."""
import json
import pathlib
import sys

root = pathlib.Path(__file__).resolve().parents[2]
out = pathlib.Path(sys.argv[1])
examples = json.loads((root / "Tests/PostbackTests/Fixtures/apple-examples.json").read_text())
seeds = {name: [] for name in ("postback", "jws", "skan", "schema", "iad", "revenue", "plist", "mappings", "networks")}
for vector in examples["vectors"]:
    if "postback" in vector:
        body = json.dumps(vector["postback"]).encode()
        seeds["postback"].append(body)
        if "jws-string" in vector["postback"]:
            seeds["jws"].append(vector["postback"]["jws-string"].encode())
        else:
            seeds["skan"].append(body)
    if "raw" in vector:
        seeds["jws"].append(vector["raw"].encode())
seeds["postback"].append((root / "Tests/PostbackTests/Fixtures/aak-dev1.json").read_bytes())
for schema in sorted((root / "examples/schemas").glob("*.json")):
    seeds["schema"].append(schema.read_bytes())
# A schema with dated mappings (docs/schemas.md#dated-mappings), two of them overlapping in the second network's list.
seeds["schema"].append(json.dumps({"format": "countersign.conversion-schema/1", "app": "1108187390", "currency": "USD",
    "source-mappings": {"example123.skadnetwork": [
        {"source-identifier": "7", "start-date": "2026-01-01", "end-date": "2026-03-31", "campaign-id": "C-100", "campaign-name": "Spring"},
        {"source-identifier": "7", "start-date": "2026-04-01", "campaign-id": "C-200", "country": "US", "publisher-id": " Example.COM "}],
        "other.adattributionkit": [{"source-identifier": "12", "start-date": "2026-01-01", "campaign-id": "X"},
                                   {"source-identifier": "12", "start-date": "2026-02-01", "campaign-id": "Y"}]},
    "versions": [{"version": 1, "effective-from": "2026-01-01T00:00:00Z", "install": {"windows": {"0": {"fine": {"values": [{"range": [0, 63], "events": [{"name": "open"}]}]}}}}}]}).encode())
seeds["iad"].append(json.dumps({"Version3.1": {
    "iad-attribution": "true", "iad-org-id": "40669820", "iad-campaign-id": "542370539", "iad-campaign-name": "campaign name",
    "iad-conversion-type": "newdownload", "iad-click-date": "2020-08-04T17:17:00Z", "iad-adgroup-id": "542317095",
    "iad-country-or-region": "US", "iad-keyword": "keyword", "iad-keyword-id": "87675432", "iad-keyword-matchtype": "Broad"}}).encode())
seeds["mappings"].append(b"Start Date,End Date,SKCampaignId,Country,Publisher ID,Campaign ID,Campaign Name,Ad Group ID,Ad Group Name,Creative ID,Creative Name\n"
                         b"2026-01-01,2026-03-31,7,,,C-100,Spring,,,,\n2026-04-01,,7,,,C-200,Summer,AG-1,Video,CR-1,Square\n2026-01-01,,7,US,,C-300,Spring US,,,,\n"
                         b"2026-01-01,,1234,,com.example.app,C-400,\"Quoted, name\",,,,\n")
# A published list of ad network ids (docs/cli.md#names): a repeat, a conflict, capitals, a refused name.
seeds["networks"].append(json.dumps([{"company_name": "Example", "skadnetwork_ids": [
    {"entity_name": "Alpha", "skadnetwork_id": "alpha12345.skadnetwork"}, {"entity_name": "Alpha", "skadnetwork_id": "alpha12345.skadnetwork"},
    {"entity_name": "Other", "skadnetwork_id": "alpha12345.skadnetwork"}, {"entity_name": " Beta ", "skadnetwork_id": "BETA123456.skadnetwork "},
    {"entity_name": "Bad\u202ename", "skadnetwork_id": "gamma12345.skadnetwork"}, {"skadnetwork_id": "delta12345.skadnetwork"}]}]).encode())
seeds["revenue"].append((root / "examples/revenue.csv").read_bytes())
seeds["revenue"].append(b"user,hours_since_install,amount,currency,date,event\nu1,0,0,USD,,install\nu1,50,4.99,EUR,2026-11-03,purchase\nu2,900,1,USD,,\n")
for fixture in sorted((root / "Tests/AppSetupTests/Fixtures").iterdir()):
    seeds["plist"].append(fixture.read_bytes())
# String escapes: line escapes are text in schemas and refused in public bodies; the rest of JSON's escapes beside them.
escapes = [r'{"name":"Merge\nKingdom"}', r'{"name":"Merge\rKingdom"}', r'{"name":"Merge\tKingdom"}',
           r'{"name":"a\b\f\/\"\\"}', r'{"name":"\u00e9\ud83d\ude00\u2028\u202e"}', r'{"name":"\ud800"}']
for text in escapes:
    seeds["schema"].append(text.encode())
    seeds["postback"].append(text.encode())
for name, items in seeds.items():
    directory = out / name
    directory.mkdir(parents=True, exist_ok=True)
    for index, item in enumerate(items):
        (directory / f"seed-{index}").write_bytes(item)
