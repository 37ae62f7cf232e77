// Command etcd is etcd v3.7.0's own server main (go.etcd.io/etcd/server/v3/etcdmain), built from the Go
// module so that upstream's integration framework (test/integration/framework/etcd.go), which runs an
// `etcd` found on PATH with etcd's flags, finds one. Nothing is changed: flags and behaviour are etcd's.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
