package tdfhook

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// timeNamespace is the entry Precreate adds to linux.namespaces.
const timeNamespace = `{"type":"time"}`

// Precreate is the podman "precreate" stage (a runtime config filter: the
// engine passes the proposed config.json and uses what the hook prints). For
// a config carrying the annotation KeyTDF it returns the config with
// {"type":"time"} appended to linux.namespaces, unless a time namespace is
// already listed (with a path too: CheckSpec refuses that at createRuntime).
// Any other config is returned unchanged, as are all other bytes of an
// annotated one: the entry is spliced into the input, nothing is re-encoded,
// so fields this package does not know survive exactly. The TDF itself is
// not validated here: the createRuntime stage does it, and its error line
// reaches the user (podman 4.3 drops a precreate hook's stderr).
func Precreate(config []byte) ([]byte, error) {
	var cfg struct {
		Annotations map[string]string `json:"annotations"`
		Bundle      *json.RawMessage  `json:"bundle"`
		Status      *json.RawMessage  `json:"status"`
	}
	if err := json.Unmarshal(config, &cfg); err != nil {
		return nil, fmt.Errorf("the config on stdin is not valid JSON: %v", err)
	}
	// an OCI state (createRuntime's input) printed back would become an
	// empty spec in the engine: refuse a misconfigured stage outright
	if cfg.Bundle != nil || cfg.Status != nil {
		return nil, fmt.Errorf("stdin holds an OCI state, not a config.json: the precreate mode is for the precreate stage only")
	}
	if _, ok := cfg.Annotations[KeyTDF]; !ok {
		return config, nil
	}
	return addTimeNamespace(config)
}

// addTimeNamespace splices {"type":"time"} into linux.namespaces of config
// (a valid JSON object), creating linux and namespaces when missing or null.
// Duplicate keys: the last one counts, as for encoding/json.
func addTimeNamespace(config []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(config))
	// offsets just after the '{' of the config and of linux, of the ']'
	// of linux.namespaces; byte ranges of a null linux or namespaces
	none := [2]int64{-1, -1}
	var linux, nsClose int64 = -1, -1
	linuxNull, nsNull := none, none
	var linuxEmpty, nsEmpty, found bool
	if err := delim(dec, '{'); err != nil {
		return nil, err
	}
	top, topEmpty := dec.InputOffset(), !dec.More()
	for dec.More() {
		k, err := key(dec)
		if err != nil {
			return nil, err
		}
		isLinux, err := specKey(k, "linux", "annotations")
		if err != nil {
			return nil, err
		}
		if !isLinux {
			if err := skip(dec); err != nil {
				return nil, err
			}
			continue
		}
		linux, linuxNull, nsClose, nsNull, found = -1, none, -1, none, false
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("config.json: %v", err)
		}
		if tok == nil {
			linuxNull = [2]int64{dec.InputOffset() - 4, dec.InputOffset()}
			continue
		}
		if tok != json.Delim('{') {
			return nil, fmt.Errorf("config.json: linux is not an object")
		}
		linux, linuxEmpty = dec.InputOffset(), !dec.More()
		for dec.More() {
			k, err := key(dec)
			if err != nil {
				return nil, err
			}
			isNamespaces, err := specKey(k, "namespaces")
			if err != nil {
				return nil, err
			}
			if !isNamespaces {
				if err := skip(dec); err != nil {
					return nil, err
				}
				continue
			}
			nsClose, nsNull, found = -1, none, false
			tok, err := dec.Token()
			if err != nil {
				return nil, fmt.Errorf("config.json: %v", err)
			}
			if tok == nil {
				nsNull = [2]int64{dec.InputOffset() - 4, dec.InputOffset()}
				continue
			}
			if tok != json.Delim('[') {
				return nil, fmt.Errorf("config.json: linux.namespaces is not an array")
			}
			nsEmpty = !dec.More()
			for dec.More() {
				var ns specs.LinuxNamespace
				if err := dec.Decode(&ns); err != nil {
					return nil, fmt.Errorf("config.json: linux.namespaces: %v", err)
				}
				if ns.Type == specs.TimeNamespace {
					found = true
				}
			}
			if err := delim(dec, ']'); err != nil {
				return nil, err
			}
			nsClose = dec.InputOffset() - 1
		}
		if err := delim(dec, '}'); err != nil {
			return nil, err
		}
	}
	if err := delim(dec, '}'); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("config.json: data after the top-level object")
	}

	comma := func(empty bool) string {
		if empty {
			return ""
		}
		return ","
	}
	ns := `"namespaces":[` + timeNamespace + `]`
	switch {
	case found:
		return config, nil
	case nsClose >= 0:
		return splice(config, nsClose, nsClose, comma(nsEmpty)+timeNamespace), nil
	case nsNull[0] >= 0:
		return splice(config, nsNull[0], nsNull[1], "["+timeNamespace+"]"), nil
	case linux >= 0:
		return splice(config, linux, linux, ns+comma(linuxEmpty)), nil
	case linuxNull[0] >= 0:
		return splice(config, linuxNull[0], linuxNull[1], "{"+ns+"}"), nil
	default:
		return splice(config, top, top, `"linux":{`+ns+`}`+comma(topEmpty)), nil
	}
}

// specKey reports whether the object key k is want. The runtime spec's keys
// are case-sensitive, but Go's decoders (runc's, podman's, this hook's) match
// them in any case: a key that equals want, or one of also, only when case
// is ignored would be read as that key by some engines and not by others,
// and a splice next to it could be shadowed by it. Refuse it.
func specKey(k, want string, also ...string) (bool, error) {
	if k == want {
		return true, nil
	}
	for _, w := range append([]string{want}, also...) {
		if k != w && strings.EqualFold(k, w) {
			return false, fmt.Errorf("config.json: key %q is %q in another case: ambiguous, the spec's keys are case-sensitive", k, w)
		}
	}
	return false, nil
}

func splice(b []byte, from, to int64, s string) []byte {
	out := make([]byte, 0, len(b)+len(s))
	out = append(out, b[:from]...)
	out = append(out, s...)
	return append(out, b[to:]...)
}

func delim(dec *json.Decoder, d json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("config.json: %v", err)
	}
	if tok != d {
		return fmt.Errorf("config.json: expected %q, got %v", d, tok)
	}
	return nil
}

func key(dec *json.Decoder) (string, error) {
	tok, err := dec.Token()
	if err != nil {
		return "", fmt.Errorf("config.json: %v", err)
	}
	k, ok := tok.(string)
	if !ok {
		return "", fmt.Errorf("config.json: expected an object key, got %v", tok)
	}
	return k, nil
}

func skip(dec *json.Decoder) error {
	var v json.RawMessage
	if err := dec.Decode(&v); err != nil {
		return fmt.Errorf("config.json: %v", err)
	}
	return nil
}
