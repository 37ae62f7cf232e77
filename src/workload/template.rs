//! Rendering object templates: the subset of Go `text/template` that scheduler_perf templates use
//! for per-object values, `{{.Index}}`, `{{.Count}}` and `{{.<templateParam>}}`.
//!
//! Upstream renders `createAny`/`updateAny` templates (and node/pod templates with `templateParams`)
//! with `.Index` in `0..count` and `.Count` = count, plus the op's template parameters. Actions other
//! than a field reference (pipelines, functions such as `Mod`) are reported, not guessed.

use std::collections::BTreeMap;

use super::spec::ParamValue;

/// The environment for object `index` of `count`: `Index`, `Count`, then the op's template params.
pub fn template_env(index: u64, count: u64, params: &BTreeMap<String, ParamValue>) -> BTreeMap<String, ParamValue> {
    let mut env = params.clone();
    env.insert("Index".to_string(), ParamValue::Int(index as i64));
    env.insert("Count".to_string(), ParamValue::Int(count as i64));
    env
}

/// Whether `text` has any `{{ }}` action, so it must be rendered per object.
pub fn is_templated(text: &str) -> bool {
    text.contains("{{")
}

/// Replaces each `{{.Name}}` (spaces allowed inside the braces) with `env[Name]`.
///
/// The error says which action could not be rendered, for the caller to wrap in an `InputError`
/// naming the template file.
pub fn render_template(text: &str, env: &BTreeMap<String, ParamValue>) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after.find("}}").ok_or_else(|| format!("unclosed action at {:?}", truncate(&rest[start..])))?;
        let action = after[..end].trim();
        let name = action
            .strip_prefix('.')
            .filter(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
            .ok_or_else(|| {
                format!("unsupported action {{{{{action}}}}}: only {{{{.Name}}}} field references are supported")
            })?;
        let value = env.get(name).ok_or_else(|| {
            let known: Vec<&str> = env.keys().map(String::as_str).collect();
            format!("{{{{.{name}}}}} is not defined: known names are {}", known.join(", "))
        })?;
        match value {
            ParamValue::Str(s) => out.push_str(s),
            other => out.push_str(&other.to_string()),
        }
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

fn truncate(s: &str) -> &str {
    match s.char_indices().nth(30) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str, expected: Result<&str, &str>) {
        let params = BTreeMap::from([
            ("zone".to_string(), ParamValue::Str("moon-1".into())),
            ("ratio".to_string(), ParamValue::Float(0.5)),
        ]);
        let env = template_env(7, 10, &params);
        match (render_template(text, &env), expected) {
            (Ok(got), Ok(want)) => assert_eq!(got, want, "{text:?}"),
            (Err(got), Err(want)) => assert!(got.contains(want), "{text:?}: {got:?} does not contain {want:?}"),
            (got, want) => panic!("{text:?}: got {got:?}, want {want:?}"),
        }
    }

    #[test]
    fn renders_field_references() {
        check("foo.com/bar-{{.Index}}: 1", Ok("foo.com/bar-7: 1"));
        check("name: test-{{ .Index }}-of-{{.Count}}", Ok("name: test-7-of-10"));
        check("zone: {{.zone}} ratio: {{.ratio}}", Ok("zone: moon-1 ratio: 0.5"));
        check("no actions", Ok("no actions"));
        check("{{.Missing}}", Err("{{.Missing}} is not defined: known names are Count, Index, ratio, zone"));
        check("{{ Mod .Index 2 }}", Err("unsupported action {{Mod .Index 2}}"));
        check("x: {{.Index", Err("unclosed action"));
        assert!(is_templated("a {{.Index}}") && !is_templated("plain"));
    }

    #[test]
    fn repository_extended_resource_templates_render() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads/misc/templates");
        for file in ["node-with-extended-resource.yaml", "pod-with-extended-resource.yaml"] {
            let text = std::fs::read_to_string(dir.join(file)).unwrap();
            let rendered = render_template(&text, &template_env(3, 5, &BTreeMap::new())).unwrap();
            assert!(rendered.contains("foo.com/bar-3: 1") && !rendered.contains("{{"), "{file}: {rendered}");
            let _: serde_norway::Value = serde_norway::from_str(&rendered).unwrap();
        }
    }
}
