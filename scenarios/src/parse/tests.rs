//! Tests of the loader: errors name file, line and field; nothing panics.

use super::*;

#[test]
fn spans_probe() {
    let base = "id = \"x\"\ndescription = \"d\"\nprofile = \"core\"\n\n[[steps]]\ndo = \"mark\"\nname = \"a\"\n\n[[steps]]\ndo = \"expect\"\nname = \"n\"\n";
    for tail in [
        "check = { kind = \"inbound\", outcome = \"allowed\" }\n",
        "check = { kind = \"inbound\", identity = { kind = \"service\" }, outcome = \"allowed\" }\n",
        "check = { kind = \"inbound\", identity = { kind = \"service\", service = 5 }, outcome = \"allowed\" }\n",
        "check = { kind = \"inbound\", identity = { kind = \"no-cert\", x = 1 }, outcome = \"allowed\" }\n",
        "check = { kind = \"inbound\", identity = { kind = \"no-cert\" }, outcome = \"allowed\" }\nwithin = 5\n",
        "check = { kind = \"inbound\", identity = { kind = \"no-cert\" }, outcome = \"allowed\" }\nwithn = \"5s\"\n",
        "check = { kind = \"inbound\", identity = { kind = \"no-cert\" }, outcome = \"allowed\" }\nwithin = \"5\"\n",
        "check = { kind = \"inbound\", identity = { kind = \"no-cert\" }, outcome = \"allowed\" }\n[[steps]]\ndo=\"clear-faults\"\nx=1\n",
        "check = { kind = \"inbound\", identity = { kind = \"no-cert\" }, outcome = \"allowed\" }\n[[steps]]\nx=1\n",
        "check = { kind = \"inbound\", identity = { kind = \"no-cert\" }, outcome = \"allowed\" }\n[[steps]]\ndo=\"open\"\nconn=\"c\"\n",
        "check = { kind = \"inbound\", identity = { kind = \"no-cert\" }, outcome = \"allowed\" }\n[setup]\nfoo = 1\n",
        "check = { kind = \"inbound\", identity = { kind = \"no-cert\" }, outcome = \"allowed\" }\n[[setup.intentions]]\nsource = \"web\"\n",
        "check = { kind = \"inbound\", identity = { kind = \"no-cert\" }, outcome = \"allowed\" }\n[[setup.intentions]]\nsource = \"web\"\naction = \"allw\"\n",
        "check = { kind = \"inbound\", identity = { kind = \"no-cert\" }, outcome = \"allowed\" }\nwithin = \n",
        "check.kind = \"conn-open\"\ncheck.conn = \"c1\"\n",
    ] {
        let text = format!("{base}{tail}");
        match parse("x.toml", &text) {
            Ok(_) => println!("OK"),
            Err(e) => println!("{e}"),
        }
    }
}
