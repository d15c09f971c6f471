module github.com/gopcp/mmv

go 1.26.0

require golang.org/x/sys v0.50.0

require (
	github.com/stretchr/testify v1.12.1
	go.yaml.in/yaml/v3 v3.0.5 // indirect
)
