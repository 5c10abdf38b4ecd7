// Package curator holds no Go code: it is examples/curator, the lab's
// sources' own Java recipe (Apache Curator's InterProcessMutex, ephemeral
// sequential nodes in ZooKeeper) as a stock service speaking the lab's
// service contract (v1), built from Debian's jars (build.sh, make curator)
// and started beside a stack by run.sh. Its test (curator_test.go) builds
// the service and checks it against the test stack's ZooKeeper and
// MariaDB.
package curator
