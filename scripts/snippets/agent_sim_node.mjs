// The README's Node snippet, run for real: the agent-sim image from npm's testcontainers.
//
// Run by scripts/snippets/run.sh (which installs testcontainers from npm, needs a Docker daemon
// and the agent-sim:latest image from scripts/build-images.sh). Arguments: a free HTTP port and
// a free gRPC port on the host. The lines between the snippet markers are the README's snippet,
// byte for byte (agent-sim/tests/readme_snippets.rs checks that).
import assert from "node:assert/strict";

const [httpPort, grpcPort] = process.argv.slice(2);

// snippet:start
import { GenericContainer, Wait } from "testcontainers";

const sim = await new GenericContainer("agent-sim:latest")
  .withNetworkMode("host")
  .withCommand(["--listen", `127.0.0.1:${httpPort}`, "--grpc-listen", `127.0.0.1:${grpcPort}`])
  .withWaitStrategy(Wait.forLogMessage("export CONSUL_HTTP_ADDR="))
  .start();
const consulHttpAddr = `127.0.0.1:${httpPort}`;
// snippet:end

try {
  // The simulated agent answers Consul's HTTP API.
  const self = await fetch(`http://${consulHttpAddr}/v1/agent/self`);
  assert.equal(self.status, 200);
  const body = await self.json();
  assert.ok(body.Config.Datacenter, JSON.stringify(body));
  const leader = await fetch(`http://${consulHttpAddr}/v1/status/leader`);
  assert.equal(leader.status, 200);
} finally {
  await sim.stop();
}
// Stopped: the port no longer answers.
await assert.rejects(fetch(`http://${consulHttpAddr}/v1/status/leader`));
console.log("node snippet: 1 passed, 0 failed");
