module amsg

go 1.26
