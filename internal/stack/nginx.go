package stack

import (
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// nginxTemplate is a copy of the top-level nginx.conf (the docker compose
// one); TestEmbeddedNginxConfIsTopLevel keeps them identical.
//
//go:embed nginx.conf
var nginxTemplate string

// nginxParams are what renderNginx substitutes.
type nginxParams struct {
	Prefix    string   // nginx -p directory (RUNDIR/nginx), holds temp dirs
	Listen    string   // 127.0.0.1:PORT
	Upstreams []string // host:port of each instance
	Pid       string
	ErrorLog  string
	AccessLog string
	Root      bool // add `user root;` (workers then run as root too)
}

// renderNginx rewrites the docker nginx.conf for the local stack: the
// `server` lines of the upstream block, `listen`, `pid`, `error_log`,
// `access_log` (path only, the format is kept) and `user`; it adds the
// *_temp_path directives at the top of the http block. It fails when the
// template lacks one of the directives it must rewrite.
func renderNginx(tmpl string, p nginxParams) (string, error) {
	if len(p.Upstreams) == 0 {
		return "", fmt.Errorf("nginx: no upstream server")
	}
	var (
		out        []string
		inUpstream bool
		found      = map[string]int{}
	)
	if p.Root {
		out = append(out, "user root;")
	}
	for _, line := range strings.Split(tmpl, "\n") {
		t := strings.TrimSpace(line)
		indent := line[:len(line)-len(strings.TrimLeft(line, " \t"))]
		word, rest, _ := strings.Cut(t, " ")
		switch {
		case strings.HasPrefix(t, "#"):
			out = append(out, line)
		case word == "user":
			// dropped: set above when running as root
		case word == "upstream" && strings.HasSuffix(t, "{"):
			inUpstream = true
			found["upstream"]++
			out = append(out, line)
		case inUpstream && t == "}":
			inUpstream = false
			out = append(out, line)
		case inUpstream && word == "server":
			if found["server"] == 0 {
				for _, u := range p.Upstreams {
					out = append(out, indent+"server "+u+";")
				}
			}
			found["server"]++
		case word == "listen":
			found["listen"]++
			out = append(out, indent+"listen "+p.Listen+";")
		case word == "pid":
			found["pid"]++
			out = append(out, indent+"pid "+p.Pid+";")
		case word == "error_log":
			found["error_log"]++
			out = append(out, indent+"error_log "+p.ErrorLog+replaceFirstField(rest))
		case word == "access_log":
			found["access_log"]++
			out = append(out, indent+"access_log "+p.AccessLog+replaceFirstField(rest))
		case t == "http {":
			found["http"]++
			out = append(out, line)
			in := indent + "    "
			for _, d := range []string{"client_body", "proxy", "fastcgi", "uwsgi", "scgi"} {
				out = append(out, in+d+"_temp_path "+filepath.Join(p.Prefix, "temp", d)+";")
			}
		default:
			out = append(out, line)
		}
	}
	for _, k := range []string{"upstream", "server", "listen", "pid", "error_log", "access_log", "http"} {
		if found[k] == 0 {
			return "", fmt.Errorf("nginx.conf template has no %q directive to rewrite", k)
		}
	}
	return strings.Join(out, "\n"), nil
}

// replaceFirstField drops the first field of a directive's arguments
// ("/var/log/x.log fmt;" -> " fmt;", "/x.log;" -> ";").
func replaceFirstField(rest string) string {
	rest = strings.TrimSpace(rest)
	if i := strings.IndexAny(rest, " \t"); i >= 0 {
		return rest[i:]
	}
	return ";"
}

// nginxFiles are the paths of the local nginx.
type nginxFiles struct {
	prefix, conf, pid, errorLog, accessLog string
}

func nginxPaths(st *State) nginxFiles {
	prefix := filepath.Join(st.Dir, "nginx")
	return nginxFiles{
		prefix:    prefix,
		conf:      filepath.Join(prefix, "nginx.conf"),
		pid:       filepath.Join(prefix, "nginx.pid"),
		errorLog:  filepath.Join(st.Dir, "logs", "nginx.log"),
		accessLog: filepath.Join(st.Dir, "logs", "nginx-access.log"),
	}
}

// writeNginxConf renders the config for the instances of st and writes it.
func writeNginxConf(st *State) (nginxFiles, error) {
	f := nginxPaths(st)
	var ups []string
	for _, c := range st.Instances() {
		ups = append(ups, c.Addr)
	}
	conf, err := renderNginx(nginxTemplate, nginxParams{
		Prefix:    f.prefix,
		Listen:    addr(st.port(offNginx)),
		Upstreams: ups,
		Pid:       f.pid,
		ErrorLog:  f.errorLog,
		AccessLog: f.accessLog,
		Root:      os.Geteuid() == 0,
	})
	if err != nil {
		return f, err
	}
	for _, d := range []string{"client_body", "proxy", "fastcgi", "uwsgi", "scgi"} {
		if err := os.MkdirAll(filepath.Join(f.prefix, "temp", d), 0o755); err != nil {
			return f, fmt.Errorf("nginx temp dir: %w", err)
		}
	}
	if err := os.MkdirAll(filepath.Dir(f.errorLog), 0o755); err != nil {
		return f, fmt.Errorf("nginx log dir: %w", err)
	}
	if err := writeFileAtomic(f.conf, []byte(conf), 0o644); err != nil {
		return f, err
	}
	return f, nil
}

// nginxArgs are the arguments to run (or test, with -t) the local nginx.
func nginxArgs(f nginxFiles) []string {
	return []string{"-p", f.prefix, "-c", f.conf, "-e", f.errorLog, "-g", "daemon off;"}
}
