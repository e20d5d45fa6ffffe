// Command etcd is etcd's server, built from go.etcd.io/etcd/server/v3 at the
// version k8s.io/kubernetes v1.37.2 is tested with (its hack/lib/etcd.sh
// requires etcd 3.7.0 or newer; Debian's etcd-server package is 3.4). It is the
// same program as etcd's own main: etcdmain.Main with the process arguments.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
