// Held-out check: the npm `consul` client (with its Watch) against agent-sim, used as a new
// user would. Exits non-zero on any failed expectation. Usage: node node_client.js HOST:PORT
"use strict";

const Consul = require("consul");

const [host, port] = process.argv[2].split(":");
const consul = new Consul({ host, port: Number(port) });
const failures = [];

function check(name, cond, detail) {
  if (cond) {
    console.log(`ok   ${name}`);
  } else {
    console.log(`FAIL ${name} ${detail === undefined ? "" : JSON.stringify(detail)}`);
    failures.push(name);
  }
}

// Resolves with the first `change` after `trigger` runs, or rejects on a watch error/timeout.
function nextChange(method, options, trigger, pred) {
  return new Promise((resolve, reject) => {
    const watch = consul.watch({ method, options, maxAttempts: 3 });
    let seen = 0;
    const timer = setTimeout(() => {
      watch.end();
      reject(new Error("watch timed out"));
    }, 30000);
    watch.on("change", (data) => {
      seen += 1;
      if (seen === 1) {
        trigger().catch(reject);
        return;
      }
      if (pred(data)) {
        clearTimeout(timer);
        watch.end();
        resolve(data);
      }
    });
    watch.on("error", (err) => {
      clearTimeout(timer);
      watch.end();
      reject(err);
    });
  });
}

async function main() {
  const self = await consul.agent.self();
  check("agent.self Config.Datacenter", self.Config.Datacenter === "dc1", self.Config);
  const members = await consul.agent.members();
  check("agent.members: this agent and its server", members.map((m) => m.Tags.role).join() === "node,consul", members);

  // The npm client has no `kind`: a sidecar is registered the way its API offers, nested.
  await consul.agent.service.register({
    name: "api",
    id: "api-1",
    port: 7000,
    meta: { y: "1", x: "2" },
    connect: { sidecarService: {} },
  });
  const svcs = await consul.agent.service.list();
  check("agent.service.list has api-1", "api-1" in svcs, Object.keys(svcs));
  await consul.agent.service.register({ name: "queue", id: "queue-1", port: 5672, check: { ttl: "30s" } });
  await consul.agent.check.pass("service:queue-1");
  const checks = await consul.agent.check.list();
  const q = checks["service:queue-1"];
  check("agent.check.list: the TTL check passing", q && q.Status === "passing", checks);
  await consul.agent.service.deregister("queue-1");
  await consul.agent.check.register({ name: "api-ttl", id: "api-ttl", ttl: "30s", serviceid: "api-1" });
  await consul.agent.check.pass("api-ttl");
  const afterPass = await consul.agent.check.list();
  check("agent.check.register + pass", afterPass["api-ttl"] && afterPass["api-ttl"].Status === "passing", afterPass);
  await consul.agent.check.deregister("api-ttl");
  check("agent.check.deregister", !("api-ttl" in (await consul.agent.check.list())));

  check("catalog.datacenters", JSON.stringify(await consul.catalog.datacenters()) === '["dc1"]');
  const nodes = await consul.catalog.node.list();
  check("catalog.node.list has the agent", nodes.some((n) => n.Node === "agent-sim"), nodes);
  const services = await consul.catalog.service.list();
  check("catalog.service.list has consul and api", "consul" in services && "api" in services, services);
  const inst = await consul.catalog.service.nodes("api");
  check("catalog.service.nodes api", inst.map((s) => s.ServiceID).join() === "api-1", inst);
  const conn = await consul.catalog.connect.nodes("api");
  check("catalog.connect.nodes api -> the proxy", conn.map((s) => s.ServiceID).join() === "api-1-sidecar-proxy", conn);
  const passing = await consul.health.service({ service: "api", passing: true });
  check("health.service passing", passing.map((e) => e.Service.ID).join() === "api-1", passing);

  const healthData = await nextChange(
    consul.health.service,
    { service: "api" },
    () => consul.agent.service.register({ name: "api", id: "api-2", port: 7001 }),
    (d) => d.some((e) => e.Service.ID === "api-2"),
  );
  check("Watch health.service sees api-2", healthData.length === 2, healthData);

  const catalogData = await nextChange(
    consul.catalog.service.list,
    {},
    () => consul.agent.service.register({ name: "billing", id: "billing-1", port: 7100 }),
    (d) => "billing" in d,
  );
  check("Watch catalog.service.list sees billing", "billing" in catalogData, catalogData);

  for (const id of ["billing-1", "api-2", "api-1"]) {
    await consul.agent.service.deregister(id);
  }
  const after = await consul.agent.service.list();
  check("all deregistered", Object.keys(after).length === 0, after);
}

main()
  .catch((err) => {
    console.log(`FAIL exception: ${err && err.stack ? err.stack : err}`);
    failures.push("exception");
  })
  .finally(() => {
    console.log(JSON.stringify({ client: "npm consul", failures }));
    process.exit(failures.length ? 1 : 0);
  });
