# A preload file for agent-sim: `cargo run -p agent-sim -- --acl --preload examples/preload.hcl`.
# Sections: tokens, config_entries, services (local agent registrations), catalog (other nodes).
tokens = [{ SecretID = "sidecar", Description = "db sidecar", Rules = "service_prefix \"\" { policy = \"write\" }" }]

config_entries = [
  { Kind = "proxy-defaults", Name = "global", Config = { protocol = "tcp" } },
  { Kind = "service-intentions", Name = "db", Sources = [
      { Name = "web", Action = "allow" },
      { Name = "*", Action = "deny" },
  ] },
]

services = [{
  Name = "db", Port = 9090,
  Connect = { SidecarService = { Port = 21000, Proxy = { Upstreams = [{ DestinationName = "cache", LocalBindPort = 9191 }] } } },
}]

catalog = [{
  Node = "n2", Address = "127.0.0.1",
  Service = { Kind = "connect-proxy", ID = "cache-1", Service = "cache-sidecar-proxy", Port = 21001,
              Proxy = { DestinationServiceName = "cache", DestinationServiceID = "cache-1" } },
  Check = { CheckID = "cache-1-alive", Name = "alive", Status = "passing", ServiceID = "cache-1" },
}]
