//! Facts about Kubernetes names that more than one layer needs: the snapshot compiles with them,
//! plugins decide with them.

/// `normalizedImageName`: add `:latest` when the name has no tag.
pub fn normalized_image_name(name: &str) -> String {
    let last_colon = name.rfind(':');
    let last_slash = name.rfind('/');
    let has_tag = match (last_colon, last_slash) {
        (Some(c), Some(s)) => c > s,
        (Some(_), None) => true,
        (None, _) => false,
    };
    if has_tag {
        name.to_string()
    } else {
        format!("{name}:latest")
    }
}

/// `IsExtendedResourceName`: outside the `kubernetes.io/` namespace, not `requests.`-prefixed, with a `/`.
pub fn is_extended_resource_name(name: &str) -> bool {
    let native = !name.contains('/') || name.contains("kubernetes.io/");
    !native && !name.starts_with("requests.")
}

/// `IsScalarResourceName`: extended, hugepages, prefixed native or attachable-volume resources.
pub fn is_scalar_resource_name(name: &str) -> bool {
    is_extended_resource_name(name)
        || name.starts_with("hugepages-")
        || name.starts_with("attachable-volumes-")
        || (name.contains("kubernetes.io/") && name.contains('/'))
}
