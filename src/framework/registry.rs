//! A registry of plugin factories by name (upstream's `runtime.Registry`). The framework builds a
//! profile's plugins from the registry it is given; it knows no plugin itself. The in-tree
//! registry is `plugins::registry::in_tree`.

use std::sync::Arc;

use super::Plugin;
use crate::config::PluginArgs;
use crate::snapshot::Interner;

/// Builds one plugin instance from the profile's args (`PluginFactory`).
pub type PluginFactory = Box<dyn Fn(&PluginArgs, &mut Interner) -> Result<Arc<dyn Plugin>, String> + Send + Sync>;

/// Plugin factories by name, in registration order.
#[derive(Default)]
pub struct Registry {
    entries: Vec<(String, PluginFactory)>,
}

impl Registry {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a factory; a name registered twice is an error (`Registry.Register`).
    pub fn register(&mut self, name: &str, factory: PluginFactory) -> Result<(), String> {
        if self.get(name).is_some() {
            return Err(format!("a plugin named {name} already exists"));
        }
        self.entries.push((name.to_string(), factory));
        Ok(())
    }

    /// Adds the plugin `plugin` itself (shared by every profile built from this registry): for tests
    /// and embedders with plugins that take no args.
    pub fn register_instance(&mut self, plugin: Arc<dyn Plugin>) -> Result<(), String> {
        let name = plugin.name();
        self.register(name, Box::new(move |_, _| Ok(plugin.clone())))
    }

    /// Adds every factory of `other` (`Registry.Merge`); a name in both is an error.
    pub fn merge(&mut self, other: Registry) -> Result<(), String> {
        for (name, f) in other.entries {
            self.register(&name, f)?;
        }
        Ok(())
    }

    pub fn get(&self, name: &str) -> Option<&PluginFactory> {
        self.entries.iter().find(|(n, _)| n == name).map(|(_, f)| f)
    }

    /// The registered names, in registration order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|(n, _)| n.as_str())
    }
}
