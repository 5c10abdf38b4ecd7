package server

// Nginx is the program in front of the instances. Its configuration
// follows the instances (internal/stack writes it), so this description
// holds only what finds and installs it; every stack runs it.
var Nginx = Spec{
	Position: 5,
	Tools: []Tool{{Key: "nginx", Names: []string{"nginx"}, Version: []string{"-v"},
		Pkgs: map[string]string{pmApt: "nginx-light", pmDnf: "nginx", pmBrew: "nginx"}}},
	// 1.28, not the distribution's 1.22: on a cluster the upstream
	// follows the instances' pods by DNS (`server ... resolve`, open
	// source since 1.27.3).
	Image: "nginx:1.28.0",
}

func init() { register(&Nginx) }
