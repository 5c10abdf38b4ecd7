// Package seckill holds the files at the root of the lab that its parts
// share at run time: the nginx configuration, used verbatim by docker
// compose and by the local stack (internal/stack).
package seckill

import _ "embed"

//go:embed nginx.conf
var nginxConf string

// NginxConf returns nginx.conf, the one nginx configuration of the lab.
func NginxConf() string { return nginxConf }
