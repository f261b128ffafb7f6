// shapes.cpp: a C++ program built with -finstrument-functions (crates/cli/tests/native_tracing.rs):
// virtual calls (Circle::area 3 times, Square::area 2 times, through Shape*), and an exception
// thrown through three instrumented frames (level3 → level2 → level1, caught in run), 4 times:
// GCC runs the exit hooks of the frames the exception unwinds. At -O2, small functions are
// inlined and still call their hooks from their caller's frame. Prints "total 31 caught 4".
#include <cstdio>
#include <stdexcept>

struct Shape {
    virtual ~Shape() {}
    virtual int area() const = 0;
};
struct Circle : Shape {
    int r;
    explicit Circle(int r) : r(r) {}
    __attribute__((noinline)) int area() const override { return 3 * r * r; }
};
struct Square : Shape {
    int s;
    explicit Square(int s) : s(s) {}
    __attribute__((noinline)) int area() const override { return s * s; }
};

__attribute__((noinline)) void level3(int i) {
    if (i >= 0) throw std::runtime_error("deep");
}
__attribute__((noinline)) void level2(int i) { level3(i); }
__attribute__((noinline)) void level1(int i) { level2(i); }

__attribute__((noinline)) int run(int i) {
    try {
        level1(i);
    } catch (const std::exception &) {
        return 1;
    }
    return 0;
}

static int add(int a, int b) { return a + b; }  // inlined at -O2

int main() {
    Circle c1(1), c2(2), c3(1);
    Square s1(3), s2(2);
    const Shape *shapes[] = {&c1, &s1, &c2, &s2, &c3};
    int total = 0;
    for (const Shape *s : shapes) total = add(total, s->area());
    int caught = 0;
    for (int i = 0; i < 4; i++) caught += run(i);
    std::printf("total %d caught %d\n", total, caught);
    return total == 31 && caught == 4 ? 0 : 1;
}
