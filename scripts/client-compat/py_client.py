"""Held-out check: the maintained Python client (py-consul, imported as `consul`) against
agent-sim, used as a new user would. Exits non-zero on the first failed expectation.

Usage: python py_client.py HOST:PORT
"""

import json
import sys
import threading
import urllib.request

import consul

HOST, PORT = sys.argv[1].rsplit(":", 1)
c = consul.Consul(host=HOST, port=int(PORT))
failures = []


def check(name, cond, detail=""):
    if cond:
        print(f"ok   {name}")
    else:
        print(f"FAIL {name} {detail}")
        failures.append(name)


def step(name, fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - report every client error as a failure
        print(f"FAIL {name}: {type(e).__name__}: {e}")
        failures.append(name)


def raw(path):
    with urllib.request.urlopen(f"http://{HOST}:{PORT}{path}") as r:
        return r.status, dict(r.headers), r.read()


def authorize(target, uri, serial):
    body = json.dumps({"Target": target, "ClientCertURI": uri, "ClientCertSerial": serial}).encode()
    req = urllib.request.Request(f"http://{HOST}:{PORT}/v1/agent/connect/authorize", data=body, method="POST")
    with urllib.request.urlopen(req) as r:
        return json.loads(r.read())


def agent():
    me = c.agent.self()
    check("agent.self has Config.Datacenter", me["Config"]["Datacenter"] == "dc1", me.get("Config"))
    check("agent.self has Member", "Name" in me["Member"])
    members = c.agent.members()
    check("agent.members: this agent and its server", [m["Tags"]["role"] for m in members] == ["node", "consul"],
          members)
    c.agent.service.register("web", service_id="web-1", port=8080, tags=["v1"], meta={"b": "2", "a": "1"})
    c.agent.service.register(
        "web-sidecar-proxy",
        service_id="web-1-sidecar-proxy",
        port=21000,
        kind="connect-proxy",
        proxy={"DestinationServiceName": "web", "DestinationServiceID": "web-1", "LocalServicePort": 8080,
               "Upstreams": [{"DestinationName": "db", "LocalBindPort": 9191}]},
    )
    svcs = c.agent.services()
    check("agent.services has web-1", "web-1" in svcs, list(svcs))
    check("agent service Meta kept", svcs["web-1"]["Meta"] == {"a": "1", "b": "2"}, svcs["web-1"])
    c.agent.service.register("cache", service_id="cache-1", port=6379, check=consul.Check.ttl("30s"))
    checks = c.agent.checks()
    check("agent.checks has the TTL check, critical", checks.get("service:cache-1", {}).get("Status") == "critical",
          checks)
    _, nodes = c.health.service("cache", passing=True)
    check("health.service passing: none before the TTL pass", nodes == [], nodes)
    c.agent.check.ttl_pass("service:cache-1")
    _, nodes = c.health.service("cache", passing=True)
    check("health.service passing lists cache-1", [n["Service"]["ID"] for n in nodes] == ["cache-1"], nodes)
    c.agent.service.deregister("cache-1")
    check("service and check deregistered", "service:cache-1" not in c.agent.checks())
    check("check.register", c.agent.check.register("web-ttl", check=consul.Check.ttl("30s"), service_id="web-1") is True)
    check("check.ttl_pass", c.agent.check.ttl_pass("web-ttl") is True)
    checks = c.agent.checks()
    check("agent.checks has web-ttl passing", checks.get("web-ttl", {}).get("Status") == "passing", checks)
    check("check.deregister", c.agent.check.deregister("web-ttl") is True)
    check("check gone", "web-ttl" not in c.agent.checks())


def catalog():
    check("catalog.datacenters", c.catalog.datacenters() == ["dc1"])
    _, nodes = c.catalog.nodes()
    names = [n["Node"] for n in nodes]
    check("catalog.nodes lists the agent's node", "agent-sim" in names, names)
    _, services = c.catalog.services()
    check("catalog.services has consul and web", "consul" in services and "web" in services, services)
    _, web = c.catalog.service("web")
    check("catalog.service web", [s["ServiceID"] for s in web] == ["web-1"], web)
    _, conn = c.catalog.connect("web")
    check("catalog.connect web lists only the proxy", all(s["ServiceKind"] == "connect-proxy" for s in conn), conn)


def ca():
    roots = c.connect.ca.roots()
    check("connect CA roots: one active root", sum(r["Active"] for r in roots["Roots"]) == 1, roots)
    conf = c.connect.ca.configuration()
    check("connect CA configuration: provider consul", conf["Provider"] == "consul", conf)
    leaf = c.agent.connect.ca.leaf("web")
    check("agent leaf for web", leaf["Service"] == "web" and "BEGIN CERTIFICATE" in leaf["CertPEM"], leaf)
    aroots = c.agent.connect.ca.roots()
    check("agent roots equal server roots", aroots["ActiveRootID"] == roots["ActiveRootID"])
    uri = leaf["ServiceURI"]
    # py-consul sends PUT, which Consul answers with 405 (the endpoint is POST only).
    try:
        c.agent.connect.authorize("db", uri, leaf["SerialNumber"])
        check("authorize by PUT is 405 as on Consul", False)
    except consul.ConsulException as e:
        check("authorize by PUT is 405 as on Consul", "405" in str(e), str(e))
    ans = authorize("db", uri, leaf["SerialNumber"])
    check("authorize web->db under allow-all default", ans["Authorized"] is True, ans)


def intentions():
    ix = c.connect.intentions
    check("intention upsert", ix.upsert("web", "db", action="allow", description="web may call db") is True)
    check("intention upsert 2", ix.upsert("*", "db", action="deny") is True)
    got = ix.read("web", "db")
    check("intention read", got["SourceName"] == "web" and got["Action"] == "allow", got)
    listed = ix.list()
    check("intention list: two, most precise first",
          [(i["SourceName"], i["DestinationName"]) for i in listed] == [("web", "db"), ("*", "db")], listed)
    filtered = ix.list(filter_expr='SourceName == "web"')
    check("intention list with filter", [i["SourceName"] for i in filtered] == ["web"], filtered)
    check("intention check", ix.check("web", "db") is True)
    check("intention check deny", ix.check("api", "db") is False)
    m = ix.match("destination", "db")
    check("intention match", [i["SourceName"] for i in m["db"]] == ["web", "*"], m)
    ans = authorize("db", "spiffe://11111111-2222-3333-4444-555555555555.consul/ns/default/dc/dc1/svc/api", "01")
    check("authorize api->db denied by * intention", ans["Authorized"] is False, ans)
    check("intention delete", ix.delete("*", "db") is True)
    check("intention list after delete", len(ix.list()) == 1)
    check("intention delete 2", ix.delete("web", "db") is True)
    check("intention list empty is []", ix.list() == [])


def config_entries():
    ok = c.config.set("service-defaults", "db", {"Protocol": "http"})
    check("config set", ok is True, ok)
    got = c.config.get("service-defaults", "db")
    check("config get", got["Protocol"] == "http", got)
    listed = c.config.list("service-defaults")
    check("config list", [e["Name"] for e in listed] == ["db"], listed)
    check("config delete", c.config.delete("service-defaults", "db") is True)


def blocking():
    index, _ = c.health.service("web")
    result = {}

    def wait():
        result["answer"] = c.health.service("web", index=index, wait="20s")

    t = threading.Thread(target=wait)
    t.start()
    c.agent.service.register("web", service_id="web-2", port=8081)
    t.join(30)
    new_index, nodes = result.get("answer", (None, []))
    check("blocking health.service wakes on register", new_index is not None and int(new_index) > int(index),
          (index, new_index))
    check("blocking answer has web-2", "web-2" in [n["Service"]["ID"] for n in nodes], nodes)
    c.agent.service.deregister("web-2")


def wire():
    status, headers, body = raw("/v1/agent/services?pretty")
    text = body.decode()
    check("?pretty indents by four spaces and ends with a newline",
          text.startswith("{\n    \"") and text.endswith("}\n"), text[:40])
    check("Meta keys in Go (sorted) order", text.index('"a": "1"') < text.index('"b": "2"'), text)


def ca_rotation():
    # A fresh agent reports exactly Consul's bootstrap config; an operator then rotates to RSA
    # through the client's own update call, and new leaves follow the new root.
    conf = c.connect.ca.configuration()
    check("CA configuration holds exactly Consul's three TTLs",
          conf["Config"] == {"IntermediateCertTTL": "8760h", "LeafCertTTL": "72h", "RootCertTTL": "87600h"}
          and conf["State"] is None, conf)
    old_active = c.connect.ca.roots()["ActiveRootID"]
    leaf_before = c.agent.connect.ca.leaf("web")
    c.connect.ca.update_configuration("consul", dict(conf["Config"], PrivateKeyType="rsa", PrivateKeyBits=2048))
    roots = c.connect.ca.roots()
    active = [r for r in roots["Roots"] if r["ID"] == roots["ActiveRootID"]]
    check("rotation to RSA: a new active RSA-2048 root, the old one still trusted",
          roots["ActiveRootID"] != old_active and len(roots["Roots"]) == 2
          and active and active[0]["PrivateKeyType"] == "rsa" and active[0]["PrivateKeyBits"] == 2048, roots)
    leaf = c.agent.connect.ca.leaf("web")
    # Consul's agent keeps generating EC P-256 leaf keys under an RSA CA (leafcert/generate.go);
    # the leaf is new (signed by the RSA root).
    check("leaf after rotation: a new EC leaf", "BEGIN EC PRIVATE KEY" in leaf["PrivateKeyPEM"]
          and leaf["SerialNumber"] != leaf_before["SerialNumber"], leaf.get("PrivateKeyPEM", "")[:40])


step("agent", agent)
step("catalog", catalog)
step("ca", ca)
step("intentions", intentions)
step("config entries", config_entries)
step("blocking", blocking)
step("wire", wire)
step("ca rotation", ca_rotation)
c.agent.service.deregister("web-1-sidecar-proxy")
c.agent.service.deregister("web-1")
print(json.dumps({"client": "py-consul", "failures": failures}))
sys.exit(1 if failures else 0)
