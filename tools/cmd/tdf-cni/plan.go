package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/containernetworking/cni/pkg/types"

	"tdfctl/profile"
	"tdfctl/scaling"
)

// Pod annotations (containerd and CRI-O pass them to plugins that declare
// the capability io.kubernetes.cri.pod-annotations).
const (
	KeyTDF   = "io.github.time-dilated-containers.tdf"
	KeyNetem = "io.github.time-dilated-containers.netem"
	capAnn   = "io.kubernetes.cri.pod-annotations"
)

// NetConf is the plugin's configuration in a chained conflist.
type NetConf struct {
	types.NetConf
	// ProfileDir: where netem profiles given by name are looked up first
	// (then profile.SearchDirs()).
	ProfileDir    string `json:"profileDir,omitempty"`
	RuntimeConfig struct {
		PodAnnotations map[string]string `json:"io.kubernetes.cri.pod-annotations,omitempty"`
	} `json:"runtimeConfig"`
}

// Plan is what a pod's annotations ask for: nil when the pod has no netem
// annotation (the plugin then only passes the result on).
type Plan struct {
	TDF     scaling.Factor
	Profile string
	Down    scaling.Netem // towards the pod: the host end of the veth
	Up      scaling.Netem // from the pod: the pod's interface
}

func parseConf(stdin []byte) (*NetConf, error) {
	var c NetConf
	if err := json.Unmarshal(stdin, &c); err != nil {
		return nil, fmt.Errorf("network configuration: %v", err)
	}
	return &c, nil
}

// MakePlan reads the annotations: KeyNetem names a profile (netem-profiles
// format), scaled by the TDF of KeyTDF with tdfctl/scaling, both directions.
func MakePlan(c *NetConf) (*Plan, error) {
	ann := c.RuntimeConfig.PodAnnotations
	name, ok := ann[KeyNetem]
	if !ok {
		return nil, nil
	}
	name = strings.TrimSpace(name)
	v, ok := ann[KeyTDF]
	if !ok {
		return nil, fmt.Errorf("annotation %s needs %s (the perceived link is scaled by the pod's TDF)", KeyNetem, KeyTDF)
	}
	tdf, err := scaling.ParseFactor("TDF", strings.TrimSpace(v))
	if err != nil {
		return nil, fmt.Errorf("annotation %s: %v", KeyTDF, err)
	}
	if !profile.IsName(name) {
		return nil, fmt.Errorf("annotation %s: %q is not a profile name (lower-case letters, digits, dot, underscore and hyphen; no paths)", KeyNetem, name)
	}
	var dirs []string
	if c.ProfileDir != "" {
		dirs = append(dirs, c.ProfileDir)
	}
	p, err := profile.Load(name, append(dirs, profile.SearchDirs()...))
	if err != nil {
		return nil, fmt.Errorf("annotation %s: %v", KeyNetem, err)
	}
	pl := &Plan{TDF: tdf, Profile: name}
	if pl.Down, _, err = scaling.ScaleLink(tdf, p.Down, scaling.DefaultLimits); err != nil {
		return nil, fmt.Errorf("annotation %s: profile %s, down at TDF %s: %v", KeyNetem, name, tdf, err)
	}
	if pl.Up, _, err = scaling.ScaleLink(tdf, p.Up, scaling.DefaultLimits); err != nil {
		return nil, fmt.Errorf("annotation %s: profile %s, up at TDF %s: %v", KeyNetem, name, tdf, err)
	}
	return pl, nil
}
