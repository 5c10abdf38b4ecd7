module github.com/seckill-lab/seckill/tools/consul

go 1.26.0

require github.com/hashicorp/consul v1.16.1
