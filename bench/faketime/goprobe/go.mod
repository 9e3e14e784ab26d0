module ftgoprobe

go 1.21
