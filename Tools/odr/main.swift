print("odr: not built yet")
