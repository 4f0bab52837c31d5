print("carrier")
