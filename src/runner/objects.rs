//! Object templates of a workload (`nodeTemplatePath`, `podTemplatePath`, `createAny`), parsed
//! once and instantiated per object; templates that use `{{.Index}}`-style fields are rendered per
//! object, as scheduler_perf does.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use ahash::AHashMap;

use crate::api::{self, Object};
use crate::error::InputError;
use crate::workload::template::Template as GoTemplate;
use crate::workload::{is_templated, template_env, ParamValue};

enum Template {
    /// Parsed once; a single Pod is also kept as one shared `Arc`, so a million pods made from it
    /// share one template object.
    Static(Arc<Vec<Object>>, Option<Arc<api::Pod>>),
    Dynamic(GoTemplate),
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
        match &self.by_path[path] {
            Template::Static(objs, _) => Ok(objs.clone()),
            Template::Dynamic(t) => {
                let file = path.display().to_string();
                let env = template_env(index, count, params);
                let rendered = t.render(&env).map_err(|e| {
                    InputError::new(
                        &file,
                        format!("line {}", e.line),
                        format!("object {index} of {count}: {}", e.message),
                    )
                })?;
                Ok(Arc::new(api::parse_objects(&rendered, &file)?))
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
                Template::Dynamic(
                    GoTemplate::parse(&text)
                        .map_err(|e| InputError::new(&file, format!("line {}", e.line), e.message))?,
                )
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
        let objs = self.instantiate(path, index, count, params)?;
        if let Some(Template::Static(_, Some(pod))) = self.by_path.get(path) {
            return Ok(pod.clone());
        }
        match objs.as_slice() {
            [Object::Pod(p)] => Ok(Arc::new(p.clone())),
            _ => {
                Err(InputError::new(path.display().to_string(), "kind", "expected exactly one Pod in the pod template"))
            }
        }
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
