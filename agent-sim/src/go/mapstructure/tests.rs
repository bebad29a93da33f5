//! Unit tests of the mapstructure-style decoder.

use super::*;
use serde_json::json;

static INNER: Schema = Schema {
    fields: &[Field("Mode", Ty::Str)],
};
static INNER_TY: Ty = Ty::Struct(&INNER);
static TOP: Schema = Schema {
    fields: &[
        Field("Name", Ty::Str),
        Field("Port", Ty::Int("int")),
        Field("Weight", Ty::Float),
        Field("Enabled", Ty::Bool),
        Field("Timeout", Ty::Duration),
        Field("MeshGateway", Ty::Struct(&INNER)),
        Field("Items", Ty::Slice(&INNER_TY)),
        Field("Tags", Ty::Slice(&Ty::Str)),
        Field("Meta", Ty::Map(&Ty::Str)),
        Field("Config", Ty::OpaqueMap),
    ],
};

fn run(v: Value) -> Result<(Value, Vec<String>), String> {
    let Value::Object(m) = v else {
        panic!("object")
    };
    decode_top(&m, &TOP)
}

#[test]
fn weak_typing_and_key_spellings() {
    let (out, unused) = run(json!({
        "name": 5, "PORT": "0x10", "weight": "12.5", "enabled": "true", "timeout": "1m",
        "mesh_gateway": [{"mode": "local"}], "items": {"Mode": "x"}, "tags": "solo",
        "Meta": {"k": 1, "n": null}, "Config": {"b": [1], "a": {"z": 1, "y": 2}}, "Extra": 1
    }))
    .unwrap();
    assert_eq!(
        out,
        json!({"Name":"5","Port":16,"Weight":12.5,"Enabled":true,"Timeout":60_000_000_000i64,
               "MeshGateway":{"Mode":"local"},"Items":[{"Mode":"x"}],"Tags":["solo"],
               "Meta":{"k":"1","n":""},"Config":{"a":{"y":2,"z":1},"b":1}})
    );
    assert_eq!(unused, vec!["Extra".to_owned()]);
    let keys: Vec<&String> = out["Config"].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["a", "b"], "opaque maps are key-sorted");
}

#[test]
fn nested_unused_keys_have_paths() {
    let (_, unused) =
        run(json!({"Items": [{"Mode": "a"}, {"Bogus": 1}], "MeshGateway": {"X": 1}})).unwrap();
    assert_eq!(
        unused,
        vec!["Items[1].Bogus".to_owned(), "MeshGateway.X".to_owned()]
    );
}

#[test]
fn errors_in_mapstructure_words() {
    let err = run(json!({"Port": "abc", "Enabled": "maybe", "Name": {"a": 1}, "Timeout": "5"}))
        .unwrap_err();
    assert_eq!(
        err,
        "4 error(s) decoding:\n\n\
         * 'Name' expected type 'string', got unconvertible type 'map[string]interface {}', value: 'map[a:1]'\n\
         * cannot parse 'Enabled' as bool: strconv.ParseBool: parsing \"maybe\": invalid syntax\n\
         * cannot parse 'Port' as int: strconv.ParseInt: parsing \"abc\": invalid syntax\n\
         * error decoding 'Timeout': time: invalid duration \"5\""
    );
    let err = run(json!({"MeshGateway": "local"})).unwrap_err();
    assert_eq!(
        err,
        "1 error(s) decoding:\n\n* 'MeshGateway' expected a map, got 'string'"
    );
}

#[test]
fn go_value_formatting() {
    assert_eq!(go_v(&json!(1e21)), "1e+21");
    assert_eq!(go_v(&json!(0.00001)), "1e-05");
    assert_eq!(go_v(&json!(1.5)), "1.5");
    assert_eq!(go_v(&json!(["a", 2, true])), "[a 2 true]");
}
