package stack

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// ZooKeeper as packaged by Debian's `zookeeper`.
const (
	zkJar       = "/usr/share/java/zookeeper.jar"
	zkConfDir   = "/etc/zookeeper/conf"
	zkLog4jProp = "/etc/zookeeper/conf/log4j.properties"
)

// tool is an external program the stack needs and its Debian package.
type tool struct {
	name, pkg string
	// file, when set, is a file (not a command) that must exist.
	file string
}

var tools = []tool{
	{name: "redis-server", pkg: "redis-server"},
	{name: "etcd", pkg: "etcd-server"},
	{name: "java", pkg: "zookeeper"},
	{name: "zookeeper.jar", pkg: "zookeeper", file: zkJar},
	{name: "mariadbd", pkg: "mariadb-server"},
	{name: "mysql_install_db", pkg: "mariadb-server"},
	{name: "nginx", pkg: "nginx-light"},
}

// lookTool finds a command in PATH, then in /usr/sbin and /sbin (not in a
// regular user's PATH on Debian, where mariadbd and nginx live).
func lookTool(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, d := range []string{"/usr/sbin", "/sbin"} {
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found", name)
}

// findTools resolves every tool; when some are missing the error names
// them and the apt packages to install.
func findTools() (map[string]string, error) {
	paths := map[string]string{}
	var missing, pkgs []string
	seen := map[string]bool{}
	for _, t := range tools {
		if t.file != "" {
			if _, err := os.Stat(t.file); err == nil {
				paths[t.name] = t.file
				continue
			}
		} else if p, err := lookTool(t.name); err == nil {
			paths[t.name] = p
			continue
		}
		missing = append(missing, t.name)
		if !seen[t.pkg] {
			seen[t.pkg] = true
			pkgs = append(pkgs, t.pkg)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%s not found: run 'make deps' or 'sudo apt-get install %s'",
			strings.Join(missing, ", "), strings.Join(pkgs, " "))
	}
	return paths, nil
}
