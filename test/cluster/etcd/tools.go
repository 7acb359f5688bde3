//go:build tools

// Package tools pins the command this module builds; the file is never compiled.
package tools

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "go.etcd.io/etcd/etcdutl/v3"
)
