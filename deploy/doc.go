// Package deploy holds no code: it is the module of the offline checks of
// slotgate's deployment files (kustomize, Helm, routing, monitoring) and of
// its Dockerfile, kept apart from the product's go.mod so that the heavy
// modules they need (k8s.io/api, kustomize, Helm, Envoy's and Prometheus's
// types) never reach slotgate's own build. Run them with
//
//	cd deploy && go test ./...
//
// The checks are in the _test.go files; testdata/ holds the good and bad
// fixtures that show each check passes the one and fails the other.
package deploy
