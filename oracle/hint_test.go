package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestHint runs cases through `hint` as a client would: one answer line per case, the real plugins'
// verdicts, and an error line (not an exit) for a case it cannot run.
func TestHint(t *testing.T) {
	node := func(labels string) string {
		return `{"apiVersion":"v1","kind":"Node","metadata":{"name":"n1","labels":{` + labels + `}}}`
	}
	pod := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"nodeSelector":{"disk":"ssd"},"containers":[{"name":"c","image":"i"}]}}`
	cases := []struct {
		name, line, want string
	}{
		{"node added with the selected label", `{"plugin":"NodeAffinity","event":"NodeAdd","newObj":` + node(`"disk":"ssd"`) + `,"pod":` + pod + `}`, "Queue"},
		{"node added without it", `{"plugin":"NodeAffinity","event":"NodeAdd","newObj":` + node(`"disk":"hdd"`) + `,"pod":` + pod + `}`, "Skip"},
		{"label update that makes it match", `{"plugin":"NodeAffinity","event":"NodeUpdate","oldObj":` + node(`"disk":"hdd"`) + `,"newObj":` + node(`"disk":"ssd"`) + `,"pod":` + pod + `}`, "Queue"},
		{"an event NodeAffinity does not register", `{"plugin":"NodeAffinity","event":"AssignedPodDelete","oldObj":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"q"},"spec":{"nodeName":"n1","containers":[{"name":"c","image":"i"}]}},"pod":` + pod + `}`, "Skip"},
		{"unknown event", `{"plugin":"NodeAffinity","event":"Nope","pod":` + pod + `}`, "error"},
	}
	var in strings.Builder
	for _, c := range cases {
		in.WriteString(c.line + "\n")
	}
	var out bytes.Buffer
	if err := cmdHint(nil, strings.NewReader(in.String()), &out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != len(cases) {
		t.Fatalf("got %d answers for %d cases: %s", len(lines), len(cases), out.String())
	}
	for i, c := range cases {
		var a struct {
			Hint  string `json:"hint"`
			Error string `json:"error"`
		}
		if err := json.Unmarshal([]byte(lines[i]), &a); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		got := a.Hint
		if a.Error != "" {
			got = "error"
		}
		if got != c.want {
			t.Errorf("%s: got %s, want %s (%s)", c.name, got, c.want, lines[i])
		}
	}
}
