module amsg

go 1.26

require github.com/dlclark/regexp2 v1.12.0
