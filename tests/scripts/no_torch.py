"""A script that never imports torch: gpubottle must run it and say so."""
total = sum(i * i for i in range(10000))
print(f"total={total}")
