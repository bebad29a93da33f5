//! Tests of manifest parsing, flags and validation errors.

use agent_sim::xds::TlsMode;

use super::*;

fn parse(text: &str) -> Result<Manifest, Error> {
    Manifest::parse(Path::new("proxy.toml"), text)
}

#[test]
fn parses_a_full_manifest() {
    let m = parse(
        r#"
name = "my-proxy"
version = "1.4.0"
command = "my-proxy -proxy-id {proxy_id}"
features = ["l4", "l7-http"]
[bounds]
reauthorize_ms = 1000
[proxy_config]
reauthorize_interval_ms = 1000
mode = "strict"
"#,
    )
    .unwrap();
    assert_eq!(m.name, "my-proxy");
    assert_eq!(m.version.as_deref(), Some("1.4.0"));
    assert_eq!(m.features, ["l4", "l7-http"]);
    assert_eq!(m.bounds.reauthorize_ms, Some(1000));
    assert_eq!(m.bounds.max_lifetime_ms, None);
    assert_eq!(m.proxy_config["mode"], json!("strict"));
    assert_eq!(m.bounds_map(), [("reauthorize_ms".to_owned(), 1000)].into());
}

#[test]
fn errors_name_file_line_and_field() {
    let err = parse("name = \"p\"\ncommand = \"p\"\nfeatures = [\"l5\"]\n").unwrap_err();
    assert_eq!(err.kind(), "manifest_invalid");
    let text = err.to_string();
    assert!(
        text.starts_with("proxy.toml: features: unknown feature \"l5\""),
        "{text}"
    );

    let err = parse("name = \"p\"\ncommand = \"p\"\ncolour = 1\n").unwrap_err();
    let text = err.to_string();
    assert!(
        text.starts_with("proxy.toml:3: unknown field `colour`"),
        "{text}"
    );

    let err = parse("name = \"p\"\n").unwrap_err();
    assert!(err.to_string().contains("missing field `command`"), "{err}");

    let err = parse("name = \"p\"\ncommand = \"p {nope}\"\n").unwrap_err();
    assert!(
        err.to_string().contains("unknown placeholder {nope}"),
        "{err}"
    );

    let err = parse("name = \"p\"\ncommand = \"p\"\n[bounds]\nreauth = 3\n").unwrap_err();
    assert!(err.to_string().contains("unknown field `reauth`"), "{err}");
}

#[test]
fn flags_build_and_adjust_a_manifest() {
    let mut m = Manifest::from_command("/usr/local/bin/my-proxy -proxy-id {proxy_id}").unwrap();
    assert_eq!(m.name, "my-proxy");
    assert!(m.features.is_empty());
    m.set_features("l4, l7-http,").unwrap();
    assert_eq!(m.features, ["l4", "l7-http"]);
    m.set_bound("reauthorize_ms=1500").unwrap();
    m.set_bound("max_lifetime_ms=60000ms").unwrap();
    assert_eq!(m.bounds.reauthorize_ms, Some(1500));
    assert_eq!(m.bounds.max_lifetime_ms, Some(60000));

    assert!(m.set_features("l4,teleport").is_err());
    assert!(
        m.set_bound("speed=3")
            .unwrap_err()
            .to_string()
            .contains("unknown bound")
    );
    assert!(m.set_bound("reauthorize_ms").is_err());
    assert!(m.set_bound("reauthorize_ms=soon").is_err());
    assert!(Manifest::from_command("p 'unterminated").is_err());
}

#[test]
fn supports_lists_missing_features() {
    let mut m = Manifest::from_command("p").unwrap();
    m.set_features("l4").unwrap();
    assert_eq!(m.supports(&["l4".into()]), Ok(()));
    assert_eq!(
        m.supports(&["l4".into(), "l7-http".into(), "upstreams".into()]),
        Err(vec!["l7-http".to_owned(), "upstreams".to_owned()])
    );
}

#[test]
fn reference_declares_everything() {
    let m = Manifest::reference();
    // Every feature but `xds` (it reads the HTTP API) and those it does not implement yet.
    assert_eq!(
        m.features.len(),
        FEATURES.len() - 1 - REFERENCE_PENDING.len()
    );
    assert!(
        !m.features
            .iter()
            .any(|f| REFERENCE_PENDING.contains(&f.as_str()))
    );
    assert!(!m.is_xds() && !m.features.iter().any(|f| f == XDS_FEATURE));
    assert_eq!(m.command, REFERENCE_COMMAND);
    assert_eq!(m.proxy_config["reauthorize_interval_ms"], json!(300));
    assert_eq!(m.bounds.reauthorize_ms, Some(300));
}

#[test]
fn names_come_from_the_program_not_a_placeholder() {
    let name = |cmd: &str| Manifest::from_command(cmd).unwrap().name;
    assert_eq!(name("/usr/local/bin/envoy-wrapper -x"), "envoy-wrapper");
    assert_eq!(
        name("{exe} reference-proxy --sabotage ignore-deny -proxy-id {proxy_id}"),
        "reference-proxy"
    );
    assert_eq!(name("{token_file} -proxy-id {proxy_id}"), "proxy");
}

#[test]
fn xds_table_and_placeholders() {
    let m = parse(
        r#"
name = "envoy"
command = "bin/envoy -c {bootstrap} --base-id {admin_port}"
features = ["l4", "xds"]
[xds]
tls_mode = "sds"
"#,
    )
    .unwrap();
    assert!(m.is_xds());
    assert_eq!(m.xds.tls_mode, TlsMode::Sds);
    assert_eq!(m.xds.admin_bind, "127.0.0.1:0".parse().unwrap());

    // The program path is the manifest directory's.
    let m = Manifest::parse(
        Path::new("examples/envoy/proxy.toml"),
        "name = \"e\"\ncommand = \"../../.tools/envoy -c {bootstrap}\"\nfeatures = [\"xds\"]\n",
    )
    .unwrap();
    let mut argv = vec!["../../.tools/envoy".to_owned(), "-c".into()];
    m.resolve_program(&mut argv);
    let cwd = std::env::current_dir().unwrap();
    assert_eq!(
        argv[0],
        cwd.join("examples/envoy/../../.tools/envoy")
            .display()
            .to_string()
    );
    let mut bare = vec!["envoy".to_owned()];
    m.resolve_program(&mut bare);
    assert_eq!(bare[0], "envoy");
    let mut abs = vec!["/usr/bin/envoy".to_owned()];
    m.resolve_program(&mut abs);
    assert_eq!(abs[0], "/usr/bin/envoy");

    // Defaults: inline, admin on a free loopback port.
    let m = parse("name = \"e\"\ncommand = \"e -c {bootstrap}\"\nfeatures = [\"xds\"]\n").unwrap();
    assert_eq!(m.xds, Xds::default());
    assert_eq!(m.xds.tls_mode, TlsMode::Inline);

    let err = parse("name = \"e\"\ncommand = \"e\"\n[xds]\ntls_mode = \"pem\"\n").unwrap_err();
    assert!(err.to_string().contains("unknown variant `pem`"), "{err}");
}

#[test]
fn xds_placeholders_need_the_xds_feature() {
    let err =
        parse("name = \"e\"\ncommand = \"e -c {bootstrap}\"\nfeatures = [\"l4\"]\n").unwrap_err();
    assert!(
        err.to_string()
            .contains("command: {bootstrap} is only set for a proxy configured over xDS"),
        "{err}"
    );
    // Flags: --proxy-cmd first, then --features xds makes it valid.
    let mut m = Manifest::from_command("envoy -c {bootstrap}").unwrap();
    assert!(m.validate("flags").is_err());
    m.set_features("l4,xds").unwrap();
    m.validate("flags").unwrap();
    m.set_xds_tls_mode("sds").unwrap();
    assert_eq!(m.xds.tls_mode, TlsMode::Sds);
    assert!(m.set_xds_tls_mode("both").is_err());
}

#[test]
fn an_interpreted_proxy_is_named_by_its_script() {
    let name = |c: &str| Manifest::from_command(c).unwrap().name;
    assert_eq!(
        name("python3 -u ./my_proxy.py -proxy-id {proxy_id}"),
        "my_proxy.py"
    );
    assert_eq!(name("node proxy.js"), "proxy.js");
    assert_eq!(name("/usr/bin/my-proxy -proxy-id {proxy_id}"), "my-proxy");
    assert_eq!(name("python3"), "python3");
}
