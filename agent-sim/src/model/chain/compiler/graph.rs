//! Post-assembly passes over the node graph: reject cycles (`detected circular reference`),
//! flatten splitters that point at splitters (multiplying weights, merging header rules), prune
//! nodes no longer reachable, and decide whether the result is the default chain.

use std::collections::BTreeSet;

use super::{Compiler, DEFAULT, graph_error};
use crate::model::chain::ChainError;
use crate::model::chain::gofmt::go_quote;
use crate::model::chain::model::{DiscoverySplit, GraphNode};

impl Compiler<'_> {
    pub(super) fn node(&self, key: &str) -> Result<&GraphNode, ChainError> {
        self.nodes.get(key).ok_or_else(|| {
            ChainError::Internal(format!(
                "compilation references non-retained node {}",
                go_quote(key)
            ))
        })
    }

    pub(super) fn next_nodes(node: &GraphNode) -> Vec<String> {
        let routes = node.routes.iter().map(|r| r.next_node.clone());
        routes
            .chain(node.splits.iter().map(|s| s.next_node.clone()))
            .collect()
    }

    pub(super) fn detect_circular_references(&self) -> Result<(), ChainError> {
        const POP: &str = "_popvisit";
        let mut todo = vec![self.start_node.clone()];
        let mut visited = BTreeSet::new();
        let mut visit_chain: Vec<String> = Vec::new();
        while let Some(current) = todo.pop() {
            if current == POP {
                if let Some(v) = visit_chain.pop() {
                    visited.remove(&v);
                }
                continue;
            }
            visit_chain.push(current.clone());
            if !visited.insert(current.clone()) {
                return Err(graph_error(&format!(
                    "detected circular reference: [{}]",
                    visit_chain.join(" -> ")
                )));
            }
            todo.push(POP.to_owned());
            todo.extend(Self::next_nodes(self.node(&current)?));
        }
        Ok(())
    }

    pub(super) fn flatten_adjacent_splitter_nodes(&mut self) -> Result<(), ChainError> {
        loop {
            let mut any_changed = false;
            let keys: Vec<String> = self.nodes.keys().cloned().collect();
            for key in keys {
                let node = self.node(&key)?;
                if node.node_type != GraphNode::SPLITTER {
                    continue;
                }
                let mut fixed = Vec::with_capacity(node.splits.len());
                let mut changed = false;
                for split in &node.splits {
                    let next = self.node(&split.next_node)?;
                    if next.node_type != GraphNode::SPLITTER {
                        fixed.push(split.clone());
                        continue;
                    }
                    changed = true;
                    for inner in &next.splits {
                        fixed.push(DiscoverySplit {
                            definition: inner.definition.merge_parent(&split.definition),
                            weight: normalize_weight(split.weight * inner.weight / 100.0),
                            next_node: inner.next_node.clone(),
                        });
                    }
                }
                if changed {
                    if let Some(node) = self.nodes.get_mut(&key) {
                        node.splits = fixed;
                    }
                    any_changed = true;
                }
            }
            if !any_changed {
                return Ok(());
            }
        }
    }

    pub(super) fn remove_unused_nodes(&mut self) -> Result<(), ChainError> {
        let mut visited = BTreeSet::new();
        let mut todo = vec![self.start_node.clone()];
        while let Some(next) = todo.pop() {
            if visited.insert(next.clone()) {
                todo.extend(Self::next_nodes(self.node(&next)?));
            }
        }
        self.nodes.retain(|key, _| visited.contains(key));
        Ok(())
    }

    /// `determineIfDefaultChain`: only the chain service's own default resolver.
    pub(super) fn is_default_chain(&self) -> bool {
        let Some(node) = self.nodes.get(&self.start_node) else {
            return true;
        };
        let Some(resolver) = node.resolver.as_ref().filter(|r| r.default) else {
            return false;
        };
        self.loaded_targets.get(&resolver.target).is_some_and(|t| {
            t.service == self.service && t.namespace == DEFAULT && t.partition == DEFAULT
        })
    }
}

/// `NormalizeServiceSplitWeight`: round to 1/100 of a percent, in float32 like Go.
fn normalize_weight(weight: f32) -> f32 {
    let scaled = f64::from(weight * 100.0).round() as i64;
    scaled as f32 / 100.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_normalize_like_consul() {
        assert_eq!(normalize_weight(40.0 * 75.0 / 100.0), 30.0);
        assert_eq!(normalize_weight(25.0 * 20.0 / 100.0 * 40.0 / 100.0), 2.0);
        assert_eq!(normalize_weight(33.333_33), 33.33);
        assert_eq!(normalize_weight(0.004), 0.0);
    }
}
