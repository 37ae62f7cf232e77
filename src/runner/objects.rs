//! Object templates of a workload (`nodeTemplatePath`, `podTemplatePath`, `createAny`), parsed
//! once and instantiated per object; templates that use `{{.Index}}`-style fields are rendered per
//! object, as scheduler_perf does.
//!
//! Rendering then parsing YAML per object is the reference path, and it cost ~150k instructions
//! per object. Two shortcuts give the same objects for less:
//! - a *flat* template (text and top-level actions only, `Template::flat_pieces`) is parsed once
//!   with markers where its actions print ([`skeleton`]); an object evaluates the actions and
//!   fills the markers, then decodes the documents, with no YAML parse;
//! - the objects made last are kept with what made them (the actions' values, or the rendered
//!   text), and reused while that repeats (pods of one group, or templates whose actions read only
//!   parameters): one shared object, as a static template's pods share one.

mod skeleton;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use ahash::AHashMap;

use crate::api::{self, Object};
use crate::error::InputError;
use crate::workload::template::{Env, Template as GoTemplate};
use crate::workload::{is_templated, template_env, ParamValue};

use skeleton::Skeleton;

enum Template {
    /// Parsed once; a single Pod is also kept as one shared `Arc`, so a million pods made from it
    /// share one template object.
    Static(Arc<Vec<Object>>, Option<Arc<api::Pod>>),
    Dynamic(Box<Dynamic>),
}

/// A template rendered per object.
struct Dynamic {
    template: GoTemplate,
    /// The template's documents with markers, when it is flat and they are exact (`skeleton`).
    skeleton: Option<Skeleton>,
    /// The objects made last, with what made them.
    last: Option<Made>,
}

/// What made a template's objects: equal keys make equal objects.
#[derive(PartialEq)]
enum MadeFrom {
    /// The values of a flat template's actions.
    Values(Vec<String>),
    /// The rendered text.
    Text(String),
}

/// Objects made from a template: a single Pod is kept as one shared `Arc` only, and put in a
/// list when asked for one (pod templates are asked for their pod).
struct Made {
    from: MadeFrom,
    objects: MadeObjects,
}

enum MadeObjects {
    Pod(Arc<api::Pod>),
    Other(Arc<Vec<Object>>),
}

impl Made {
    fn new(from: MadeFrom, mut objects: Vec<Object>) -> Made {
        let objects = match objects.pop() {
            Some(Object::Pod(p)) if objects.is_empty() => MadeObjects::Pod(Arc::new(p)),
            last => {
                objects.extend(last);
                MadeObjects::Other(Arc::new(objects))
            }
        };
        Made { from, objects }
    }

    fn objects(&self) -> Arc<Vec<Object>> {
        match &self.objects {
            MadeObjects::Pod(p) => Arc::new(vec![Object::Pod((**p).clone())]),
            MadeObjects::Other(objects) => objects.clone(),
        }
    }

    fn pod(&self) -> Option<Arc<api::Pod>> {
        match &self.objects {
            MadeObjects::Pod(p) => Some(p.clone()),
            MadeObjects::Other(_) => None,
        }
    }
}

impl Dynamic {
    fn new(template: GoTemplate, source: &str, file: &str) -> Dynamic {
        let skeleton = template.flat_pieces().and_then(|pieces| Skeleton::new(&pieces, source, file));
        Dynamic { template, skeleton, last: None }
    }

    /// The objects for `env` (object `index` of `count`): from the skeleton when the template has
    /// one and the values fit it, else rendered and parsed; reused when made from the same values
    /// or text as last time.
    fn instantiate(&mut self, env: Env, index: u64, count: u64, file: &str) -> Result<&Made, InputError> {
        let mut from = None;
        if let Some(sk) = &self.skeleton {
            let mut values = Vec::new();
            // An error is reported by `render` below, the reference path, which fails the same way.
            if self.template.action_values(env.clone(), &mut values).is_ok() {
                if self.last.as_ref().is_some_and(|m| matches!(&m.from, MadeFrom::Values(v) if *v == values)) {
                    return Ok(self.last.as_ref().expect("checked"));
                }
                if let Some(documents) = sk.fill(&values) {
                    let objects = api::objects_from_documents(documents, file)?;
                    from = Some((MadeFrom::Values(values), objects));
                }
            }
        }
        let (from, objects) = match from {
            Some(made) => made,
            None => {
                let rendered = self.template.render(&env).map_err(|e| {
                    InputError::new(
                        file,
                        format!("line {}", e.line),
                        format!("object {index} of {count}: {}", e.message),
                    )
                })?;
                if self.last.as_ref().is_some_and(|m| matches!(&m.from, MadeFrom::Text(t) if *t == rendered)) {
                    return Ok(self.last.as_ref().expect("checked"));
                }
                let objects = api::parse_objects(&rendered, file)?;
                (MadeFrom::Text(rendered), objects)
            }
        };
        Ok(self.last.insert(Made::new(from, objects)))
    }
}

/// Parsed templates by path.
#[derive(Default)]
pub struct Templates {
    by_path: AHashMap<PathBuf, Template>,
}

impl Templates {
    /// The objects of template `path` for object number `index` of `count`.
    pub fn instantiate(
        &mut self,
        path: &Path,
        index: u64,
        count: u64,
        params: &BTreeMap<String, ParamValue>,
    ) -> Result<Arc<Vec<Object>>, InputError> {
        self.load(path)?;
        self.load(path)?;
        match self.by_path.get_mut(path).expect("loaded above") {
            Template::Static(objs, _) => Ok(objs.clone()),
            Template::Dynamic(t) => {
                let file = path.display().to_string();
                Ok(t.instantiate(template_env(index, count, params), index, count, &file)?.objects())
            }
        }
    }

    /// Reads and parses template `path` the first time it is asked for.
    fn load(&mut self, path: &Path) -> Result<(), InputError> {
        if !self.by_path.contains_key(path) {
            let file = path.display().to_string();
            let text = std::fs::read_to_string(path)
                .map_err(|e| InputError::new(&file, "", format!("cannot read the template: {e}")))?;
            let t = if is_templated(&text) {
                let t = GoTemplate::parse(&text)
                    .map_err(|e| InputError::new(&file, format!("line {}", e.line), e.message))?;
                Template::Dynamic(Box::new(Dynamic::new(t, &text, &file)))
            } else {
                let objs = api::parse_objects(&text, &file)?;
                let pod = match objs.as_slice() {
                    [Object::Pod(p)] => Some(Arc::new(p.clone())),
                    _ => None,
                };
                Template::Static(Arc::new(objs), pod)
            };
            self.by_path.insert(path.to_path_buf(), t);
        }
        Ok(())
    }

    /// The single Node of a node template.
    pub fn node(
        &mut self,
        path: &Path,
        index: u64,
        count: u64,
        params: &BTreeMap<String, ParamValue>,
    ) -> Result<api::Node, InputError> {
        let objs = self.instantiate(path, index, count, params)?;
        match objs.as_slice() {
            [Object::Node(n)] => Ok(n.clone()),
            _ => Err(InputError::new(
                path.display().to_string(),
                "kind",
                "expected exactly one Node in the node template",
            )),
        }
    }

    /// The Pod every object of template `path` is, when the template is one static Pod (no
    /// `{{...}}` fields): a createPods op then clones one `Arc` per pod instead of looking the
    /// template up. `None` for a template rendered per object.
    pub fn static_pod(&mut self, path: &Path) -> Result<Option<Arc<api::Pod>>, InputError> {
        self.load(path)?;
        Ok(match self.by_path.get(path) {
            Some(Template::Static(_, pod)) => pod.clone(),
            _ => None,
        })
    }

    /// The single Pod of a pod template.
    pub fn pod(
        &mut self,
        path: &Path,
        index: u64,
        count: u64,
        params: &BTreeMap<String, ParamValue>,
    ) -> Result<Arc<api::Pod>, InputError> {
        self.load(path)?;
        let file = path.display().to_string();
        let pod = match self.by_path.get_mut(path).expect("loaded above") {
            Template::Static(_, pod) => pod.clone(),
            Template::Dynamic(t) => t.instantiate(template_env(index, count, params), index, count, &file)?.pod(),
        };
        pod.ok_or_else(|| InputError::new(file, "kind", "expected exactly one Pod in the pod template"))
    }
}

/// scheduler_perf's built-in node (`node-default.yaml`): 4 CPU, 32Gi, 110 pods.
pub fn default_node() -> api::Node {
    let text = "apiVersion: v1\nkind: Node\nmetadata:\n  generateName: scheduler-perf-\nstatus:\n  capacity: {pods: '110', cpu: '4', memory: 32Gi}\n  allocatable: {pods: '110', cpu: '4', memory: 32Gi}\n";
    match api::parse_objects(text, "<default node>").expect("the built-in node parses").remove(0) {
        Object::Node(n) => n,
        _ => unreachable!("the built-in node is a Node"),
    }
}

/// scheduler_perf's built-in pod (`pod-default.yaml`): pause, 100m CPU, 500Mi. One shared object.
pub fn default_pod() -> Arc<api::Pod> {
    static POD: std::sync::LazyLock<Arc<api::Pod>> = std::sync::LazyLock::new(|| {
        let text = "apiVersion: v1\nkind: Pod\nmetadata:\n  generateName: pod-\nspec:\n  containers:\n  - name: pause\n    image: registry.k8s.io/pause:3.10\n    resources:\n      requests: {cpu: 100m, memory: 500Mi}\n";
        match api::parse_objects(text, "<default pod>").expect("the built-in pod parses").remove(0) {
            Object::Pod(p) => Arc::new(p),
            _ => unreachable!("the built-in pod is a Pod"),
        }
    });
    POD.clone()
}
