package cluster

//go:generate go run ./gen -out ../../deploy/k8s
