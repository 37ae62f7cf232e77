// Command schedperf-oracle runs the real kube-scheduler (k8s.io/kubernetes v1.37.2) on a fake clientset so
// schedperf's decisions can be checked against upstream's code paths.
//
//	schedperf-oracle version
//	schedperf-oracle explain --cluster F [--cluster F ...] --pod F [--config F] [--feature-gates A=true] --output json
//	schedperf-oracle run PATH [--test-case T] [--workload W] [--label-filter L] [--out DIR] [--format table|json]
//	schedperf-oracle serve   (JSON lines on stdin/stdout; see README.md)
//	schedperf-oracle queue   (queue scripts on stdin, one per line; see README.md)
//	schedperf-oracle hint    (queueing-hint cases on stdin, one per line; see README.md)
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strings"

	v1 "k8s.io/api/core/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
)

const kubernetesVersion = "v1.37.2"

// inputError is bad input: reported on one line, exit code 2.
type inputError struct{ msg string }

func (e *inputError) Error() string { return e.msg }

func badInput(format string, args ...any) error { return &inputError{fmt.Sprintf(format, args...)} }

func main() {
	quietLogs()
	code := run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	os.Exit(code)
}

// quietLogs keeps klog to warnings and errors on stderr.
func quietLogs() {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	_ = fs.Set("v", "0")
	_ = fs.Set("stderrthreshold", "ERROR")
	_ = fs.Set("logtostderr", "true")
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) (code int) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(stderr, "schedperf-oracle: internal error (panic): %v\n%s", r, debug.Stack())
			code = 3
		}
	}()
	if len(args) == 0 {
		fmt.Fprintln(stderr, "usage: schedperf-oracle version | explain ... | run PATH ... | serve")
		return 2
	}
	var err error
	switch args[0] {
	case "version":
		err = cmdVersion(args[1:], stdout)
	case "explain":
		err = cmdExplain(args[1:], stdout)
	case "run":
		err = cmdRun(args[1:], stdout, stderr)
	case "serve":
		err = serve(stdin, stdout, stderr)
	case "queue":
		err = cmdQueue(args[1:], stdin, stdout)
	case "hint":
		err = cmdHint(args[1:], stdin, stdout)
	default:
		err = badInput("unknown command %q (want version, explain, run, serve, queue or hint)", args[0])
	}
	if err != nil {
		fmt.Fprintf(stderr, "schedperf-oracle: %s\n", strings.ReplaceAll(err.Error(), "\n", "; "))
		if _, ok := err.(*inputError); ok {
			return 2
		}
		return 1
	}
	return 0
}

type versionInfo struct {
	Kubernetes   string          `json:"kubernetes"`
	Go           string          `json:"go"`
	FeatureGates map[string]bool `json:"featureGates"`
}

func cmdVersion(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	gates := fs.String("feature-gates", "", "A=true,B=false")
	if err := fs.Parse(args); err != nil {
		return badInput("version: %v", err)
	}
	if err := setGatesFlag(*gates); err != nil {
		return err
	}
	return writeJSON(stdout, versionInfo{Kubernetes: kubernetesVersion, Go: runtime.Version(), FeatureGates: effectiveSchedulerGates()})
}

func setGatesFlag(s string) error {
	m, err := parseGateFlag(s)
	if err != nil {
		return badInput("%v", err)
	}
	if err := applyGates(m); err != nil {
		return badInput("--feature-gates: %v", err)
	}
	return nil
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func cmdExplain(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("explain", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var clusters multiFlag
	fs.Var(&clusters, "cluster", "cluster file (repeatable)")
	podFile := fs.String("pod", "", "pod file")
	configFile := fs.String("config", "", "KubeSchedulerConfiguration file")
	gates := fs.String("feature-gates", "", "A=true,B=false")
	output := fs.String("output", "json", "json")
	if err := fs.Parse(args); err != nil {
		return badInput("explain: %v", err)
	}
	if fs.NArg() > 0 {
		return badInput("explain: unexpected argument %q", fs.Arg(0))
	}
	if *output != "json" {
		return badInput("explain: --output: only json is supported, got %q", *output)
	}
	if *podFile == "" {
		return badInput("explain: --pod is required")
	}
	if err := setGatesFlag(*gates); err != nil {
		return err
	}
	var cfgData []byte
	if *configFile != "" {
		b, err := readFile(*configFile)
		if err != nil {
			return badInput("%v", err)
		}
		cfgData = b
	}
	cfg, err := loadConfig(cfgData)
	if err != nil {
		return badInput("%s: %v", nameOr(*configFile, "default config"), err)
	}
	var cluster []k8sruntime.Object
	for _, f := range clusters {
		b, err := readFile(f)
		if err != nil {
			return badInput("%v", err)
		}
		objs, err := decodeObjects(f, b)
		if err != nil {
			return badInput("%v", err)
		}
		cluster = append(cluster, objs...)
	}
	b, err := readFile(*podFile)
	if err != nil {
		return badInput("%v", err)
	}
	pod, err := decodePod(*podFile, b)
	if err != nil {
		return err
	}
	out, err := explainPod(cfg, cluster, pod)
	if err != nil {
		return badInput("%v", err)
	}
	return writeJSON(stdout, out)
}

func nameOr(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}

// decodePod reads exactly one Pod.
func decodePod(source string, data []byte) (*v1.Pod, error) {
	objs, err := decodeObjects(source, data)
	if err != nil {
		return nil, badInput("%v", err)
	}
	var pods []*v1.Pod
	for _, o := range objs {
		if p, ok := o.(*v1.Pod); ok {
			pods = append(pods, p)
		}
	}
	if len(pods) != 1 {
		return nil, badInput("%s: expected exactly one Pod, found %d", source, len(pods))
	}
	return pods[0], nil
}

func writeJSON(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	_, err = w.Write(b)
	return err
}

// configCache keeps decoded configurations by (feature gates, text).
var configCache = map[string]*config.KubeSchedulerConfiguration{}
