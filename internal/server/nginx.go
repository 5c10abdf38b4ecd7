package server

// Nginx is the program in front of the instances. Its configuration
// follows the instances (internal/stack writes it), so this description
// holds only what finds and installs it; every stack runs it.
var Nginx = Spec{
	Position: 5,
	Tools: []Tool{{Key: "nginx", Names: []string{"nginx"}, Version: []string{"-v"},
		Pkgs: map[string]string{pmApt: "nginx-light", pmDnf: "nginx", pmBrew: "nginx"}}},
}

func init() { register(&Nginx) }
