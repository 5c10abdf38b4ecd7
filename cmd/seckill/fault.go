package main

import (
	"strings"

	"github.com/seckill-lab/seckill/bench"
)

// faultFlags collects repeated --fault specs.
type faultFlags []bench.Fault

func (f *faultFlags) String() string {
	var s []string
	for _, x := range *f {
		s = append(s, x.String())
	}
	return strings.Join(s, ",")
}

func (f *faultFlags) Set(v string) error {
	x, err := bench.ParseFault(v)
	if err != nil {
		return err
	}
	*f = append(*f, x)
	return nil
}
