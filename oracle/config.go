package main

import (
	"fmt"

	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/latest"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/validation"
)

// loadConfig decodes a KubeSchedulerConfiguration the way kube-scheduler does (strict decoding through the
// scheduler scheme, which also defaults it), or returns latest.Default() for empty data, and validates it.
// Feature gates must be applied before: defaulting depends on them.
func loadConfig(data []byte) (*config.KubeSchedulerConfiguration, error) {
	cfg, err := decodeConfig(data)
	if err != nil {
		return nil, err
	}
	// Deterministic scan: one worker.
	cfg.Parallelism = 1
	return cfg, nil
}

// decodeConfig is loadConfig with the configuration's own parallelism (16 by default), as `run` uses it.
func decodeConfig(data []byte) (*config.KubeSchedulerConfiguration, error) {
	var cfg *config.KubeSchedulerConfiguration
	if len(data) == 0 {
		c, err := latest.Default()
		if err != nil {
			return nil, err
		}
		cfg = c
	} else {
		obj, gvk, err := scheme.Codecs.UniversalDecoder().Decode(data, nil, nil)
		if err != nil {
			return nil, err
		}
		c, ok := obj.(*config.KubeSchedulerConfiguration)
		if !ok {
			return nil, fmt.Errorf("kind: expected KubeSchedulerConfiguration, got %s", gvk)
		}
		c.TypeMeta.APIVersion = gvk.GroupVersion().String()
		cfg = c
	}
	if err := validation.ValidateKubeSchedulerConfiguration(cfg); err != nil {
		return nil, fmt.Errorf("invalid configuration: %v", err)
	}
	return cfg, nil
}

// withoutSampling returns profiles that score every feasible node (percentageOfNodesToScore 100).
func withoutSampling(cfg *config.KubeSchedulerConfiguration) []config.KubeSchedulerProfile {
	hundred := int32(100)
	out := make([]config.KubeSchedulerProfile, len(cfg.Profiles))
	for i, p := range cfg.Profiles {
		p.PercentageOfNodesToScore = &hundred
		out[i] = p
	}
	return out
}
