package main

import (
	"strings"

	"github.com/seckill-lab/seckill/bench"
	"github.com/seckill-lab/seckill/bench/fleet"
	"github.com/seckill-lab/seckill/internal/fault"
)

// faultFlags collects repeated --fault specs.
type faultFlags []fleet.Fault

func (f *faultFlags) String() string {
	var s []string
	for _, x := range *f {
		s = append(s, x.String())
	}
	return strings.Join(s, ",")
}

func (f *faultFlags) Set(v string) error {
	x, err := fault.Parse(v)
	if err != nil {
		return err
	}
	*f = append(*f, x)
	return nil
}

// serviceFlags collects repeated --service NAME=URL values.
type serviceFlags []bench.Service

func (f *serviceFlags) String() string {
	var s []string
	for _, x := range *f {
		s = append(s, x.Name+"="+x.URL)
	}
	return strings.Join(s, ",")
}

func (f *serviceFlags) Set(v string) error {
	s, err := bench.ParseService(v)
	if err != nil {
		return err
	}
	*f = append(*f, s)
	return nil
}
