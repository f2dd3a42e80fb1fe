"""Minimal stand-ins for third-party headers that are not installed here.

run.py writes one of these instead of an empty stub when a missing header's
name matches, so that code using OpenCV, raylib or cxxopts keeps parsing and
the LibTorch code around it (loops, tensors fed from a cv::Mat) keeps its
types. They declare only what the corpus uses, loosely (variadic functions
accept any arguments): enough for the analyzer, never for a build.
"""
import re

# Part of run.py's cache key: findings made with other stubs are not reused.
STUB_VERSION = 5

OPENCV = r"""#pragma once
// minimal OpenCV stand-in written by bench/realcode/run.py
#include <cstddef>
#include <string>
#include <vector>
#define CV_8U 0
#define CV_8S 1
#define CV_16U 2
#define CV_32S 4
#define CV_32F 5
#define CV_64F 6
#define CV_8UC1 0
#define CV_8UC3 16
#define CV_8UC4 24
#define CV_32FC1 5
#define CV_32FC3 21
#define CV_64FC1 6
#define CV_8UC(n) (((n) - 1) << 3)
#define CV_32FC(n) (5 + (((n) - 1) << 3))
#define CV_PI 3.1415926535897932384626433832795
typedef unsigned char uchar;
namespace cv {
using String = std::string;
enum ColorConversionCodes { COLOR_BGR2RGB, COLOR_RGB2BGR, COLOR_BGR2GRAY, COLOR_GRAY2BGR, COLOR_RGB2GRAY,
       COLOR_GRAY2RGB, COLOR_BGRA2BGR, COLOR_BGR2BGRA, COLOR_BGR2HSV, COLOR_BGRA2RGB };
enum InterpolationFlags { INTER_NEAREST, INTER_LINEAR, INTER_CUBIC, INTER_AREA };
enum ImreadModes { IMREAD_UNCHANGED = -1, IMREAD_GRAYSCALE = 0, IMREAD_COLOR = 1 };
enum BorderTypes { BORDER_CONSTANT, BORDER_REPLICATE, BORDER_REFLECT };
enum LineTypes { FILLED = -1, LINE_4 = 4, LINE_8 = 8, LINE_AA = 16 };
enum HersheyFonts { FONT_HERSHEY_SIMPLEX, FONT_HERSHEY_PLAIN, FONT_HERSHEY_DUPLEX, FONT_HERSHEY_COMPLEX };
enum NormTypes { NORM_INF = 1, NORM_L1 = 2, NORM_L2 = 4, NORM_MINMAX = 32 };
enum WindowFlags { WINDOW_NORMAL = 0, WINDOW_AUTOSIZE = 1, WINDOW_KEEPRATIO = 0, WINDOW_FREERATIO = 256 };
enum WindowPropertyFlags { WND_PROP_VISIBLE = 4 };
enum VideoCaptureProperties { CAP_PROP_POS_FRAMES = 1, CAP_PROP_FRAME_WIDTH = 3, CAP_PROP_FRAME_HEIGHT = 4,
       CAP_PROP_FPS = 5, CAP_PROP_FRAME_COUNT = 7 };
template <class T> struct Point_ {
  T x{}, y{};
  Point_() = default;
  Point_(T a, T b) : x(a), y(b) {}
  template <class U> operator Point_<U>() const;
};
using Point = Point_<int>;
using Point2i = Point_<int>;
using Point2f = Point_<float>;
using Point2d = Point_<double>;
template <class T> Point_<T> operator+(const Point_<T> &, const Point_<T> &);
template <class T> Point_<T> operator-(const Point_<T> &, const Point_<T> &);
template <class T> struct Size_ {
  T width{}, height{};
  Size_() = default;
  Size_(T w, T h) : width(w), height(h) {}
  T area() const;
  bool empty() const;
};
using Size = Size_<int>;
using Size2f = Size_<float>;
template <class S, class T> S &operator<<(S &, const Size_<T> &);
template <class T> struct Rect_ {
  T x{}, y{}, width{}, height{};
  Rect_() = default;
  Rect_(T a, T b, T w, T h) : x(a), y(b), width(w), height(h) {}
  Rect_(const Point_<T> &, const Point_<T> &);
  T area() const;
  Point_<T> tl() const;
  Point_<T> br() const;
  Size_<T> size() const;
  bool empty() const;
  Rect_ operator&(const Rect_ &) const;
  Rect_ operator|(const Rect_ &) const;
};
using Rect = Rect_<int>;
using Rect2i = Rect_<int>;
using Rect2f = Rect_<float>;
using Rect2d = Rect_<double>;
struct RotatedRect {
  RotatedRect();
  RotatedRect(const Point2f &, const Size2f &, float);
  Point2f center;
  Size2f size;
  float angle;
  void points(Point2f *) const;
};
struct Scalar {
  Scalar(double = 0, double = 0, double = 0, double = 0);
  double operator[](int) const;
};
template <class T, int N> struct Vec {
  Vec();
  template <class... A> Vec(A...);
  T val[N];
  T &operator[](int);
  const T &operator[](int) const;
};
using Vec3b = Vec<unsigned char, 3>;
using Vec4b = Vec<unsigned char, 4>;
using Vec3f = Vec<float, 3>;
struct Range {
  Range(int, int);
  static Range all();
};
class Mat;
struct MatExpr;
class Mat {
public:
  Mat();
  template <class A, class... B> Mat(const A &, const B &...);
  Mat(const Mat &);
  Mat(const MatExpr &);
  Mat &operator=(const Mat &);
  Mat &operator=(const MatExpr &);
  struct MatSize {
    Size operator()() const;
    int operator[](int) const;
  } size;
  struct MatStep {
    std::size_t operator[](int) const;
    operator std::size_t() const;
  } step;
  int rows = 0, cols = 0, dims = 2, flags = 0;
  unsigned char *data = nullptr;
  int channels() const;
  int type() const;
  int depth() const;
  bool empty() const;
  bool isContinuous() const;
  std::size_t total() const;
  std::size_t elemSize() const;
  Mat clone() const;
  Mat t() const;
  Mat row(int) const;
  Mat col(int) const;
  Mat rowRange(int, int) const;
  Mat colRange(int, int) const;
  template <class... A> void copyTo(A &&...) const;
  template <class... A> void convertTo(A &&...) const;
  template <class... A> Mat reshape(A &&...) const;
  template <class... A> Mat &setTo(A &&...);
  template <class... A> Mat operator()(A &&...) const;
  template <class T, class... A> T &at(A...);
  template <class T, class... A> const T &at(A...) const;
  template <class T = unsigned char> T *ptr(int = 0);
  template <class T = unsigned char> const T *ptr(int = 0) const;
  void release();
  void push_back(const Mat &);
  template <class... A> void create(A &&...);
  template <class... A> static MatExpr zeros(A...);
  template <class... A> static MatExpr ones(A...);
  template <class... A> static MatExpr eye(A...);
};
struct MatExpr {
  operator Mat() const;
};
template <class A> MatExpr operator+(const Mat &, const A &);
template <class A> MatExpr operator-(const Mat &, const A &);
template <class A> MatExpr operator*(const Mat &, const A &);
template <class A> MatExpr operator/(const Mat &, const A &);
using InputArray = const Mat &;
using OutputArray = Mat &;
template <class... A> Mat imread(A &&...);
template <class... A> Mat imdecode(A &&...);
template <class... A> bool imwrite(A &&...);
template <class... A> void imshow(A &&...);
template <class... A> int waitKey(A &&...);
template <class... A> void namedWindow(A &&...);
template <class... A> void resizeWindow(A &&...);
template <class... A> double getWindowProperty(A &&...);
void destroyAllWindows();
template <class... A> void resize(A &&...);
template <class... A> void cvtColor(A &&...);
template <class... A> void flip(A &&...);
template <class... A> void split(A &&...);
template <class... A> void merge(A &&...);
template <class... A> void copyMakeBorder(A &&...);
template <class... A> void normalize(A &&...);
template <class... A> void subtract(A &&...);
template <class... A> void divide(A &&...);
template <class... A> void warpAffine(A &&...);
template <class... A> Mat getRotationMatrix2D(A &&...);
template <class... A> void rectangle(A &&...);
template <class... A> void line(A &&...);
template <class... A> void circle(A &&...);
template <class... A> void polylines(A &&...);
template <class... A> void fillPoly(A &&...);
template <class... A> void putText(A &&...);
template <class... A> Size getTextSize(A &&...);
template <class... A> double pointPolygonTest(A &&...);
template <class... A> int rotatedRectangleIntersection(A &&...);
template <class... A> void hconcat(A &&...);
template <class... A> void vconcat(A &&...);
template <class... A> void minMaxLoc(A &&...);
long long getTickCount();
double getTickFrequency();
class Exception : public std::exception {
public:
  const char *what() const noexcept override;
  std::string msg;
};
class VideoCapture {
public:
  VideoCapture();
  template <class A, class... B> explicit VideoCapture(const A &, const B &...);
  template <class... A> bool open(A &&...);
  bool isOpened() const;
  bool read(Mat &);
  VideoCapture &operator>>(Mat &);
  double get(int) const;
  bool set(int, double);
  void release();
};
class VideoWriter {
public:
  VideoWriter();
  template <class A, class... B> VideoWriter(const A &, const B &...);
  template <class... A> bool open(A &&...);
  bool isOpened() const;
  void write(const Mat &);
  VideoWriter &operator<<(const Mat &);
  void release();
  static int fourcc(char, char, char, char);
};
class KalmanFilter {
public:
  KalmanFilter();
  KalmanFilter(int, int, int = 0, int = 5);
  template <class... A> void init(A &&...);
  const Mat &predict(const Mat & = Mat());
  const Mat &correct(const Mat &);
  Mat statePre, statePost, transitionMatrix, controlMatrix, measurementMatrix,
      processNoiseCov, measurementNoiseCov, errorCovPre, gain, errorCovPost;
};
} // namespace cv
"""

RAYLIB = r"""#pragma once
// minimal raylib stand-in written by bench/realcode/run.py
typedef struct Color { unsigned char r, g, b, a; } Color;
typedef struct Vector2 { float x, y; } Vector2;
typedef struct Vector3 { float x, y, z; } Vector3;
typedef struct Rectangle { float x, y, width, height; } Rectangle;
typedef struct Image { void *data; int width, height, mipmaps, format; } Image;
typedef struct Texture { unsigned int id; int width, height, mipmaps, format; } Texture;
typedef Texture Texture2D;
typedef struct Font { int baseSize, glyphCount, glyphPadding; Texture2D texture; } Font;
typedef struct Sound { unsigned int frameCount; } Sound;
typedef struct Camera2D { Vector2 offset, target; float rotation, zoom; } Camera2D;
#define RAYWHITE Color{245, 245, 245, 255}
#define WHITE Color{255, 255, 255, 255}
#define BLACK Color{0, 0, 0, 255}
#define RED Color{230, 41, 55, 255}
#define GREEN Color{0, 228, 48, 255}
#define BLUE Color{0, 121, 241, 255}
#define GRAY Color{130, 130, 130, 255}
#define DARKGRAY Color{80, 80, 80, 255}
#define LIGHTGRAY Color{200, 200, 200, 255}
#define YELLOW Color{253, 249, 0, 255}
#define ORANGE Color{255, 161, 0, 255}
#define DARKGREEN Color{0, 117, 44, 255}
#define SKYBLUE Color{102, 191, 255, 255}
#define MAROON Color{190, 33, 55, 255}
#define BROWN Color{127, 106, 79, 255}
enum { KEY_SPACE = 32, KEY_ENTER = 257, KEY_RIGHT = 262, KEY_LEFT = 263, KEY_DOWN = 264,
       KEY_UP = 265, KEY_ESCAPE = 256, KEY_A = 65, KEY_D = 68, KEY_S = 83, KEY_W = 87 };
enum { FLAG_WINDOW_RESIZABLE = 4, FLAG_VSYNC_HINT = 64, FLAG_MSAA_4X_HINT = 32 };
void InitWindow(int, int, const char *);
void CloseWindow(void);
bool WindowShouldClose(void);
void SetTargetFPS(int);
void SetConfigFlags(unsigned int);
void BeginDrawing(void);
void EndDrawing(void);
void ClearBackground(Color);
void DrawRectangle(int, int, int, int, Color);
void DrawRectangleRec(Rectangle, Color);
void DrawRectangleLines(int, int, int, int, Color);
void DrawCircle(int, int, float, Color);
void DrawCircleV(Vector2, float, Color);
void DrawLine(int, int, int, int, Color);
void DrawText(const char *, int, int, int, Color);
void DrawFPS(int, int);
void DrawTexture(Texture2D, int, int, Color);
void DrawTextureEx(Texture2D, Vector2, float, float, Color);
void DrawTextureRec(Texture2D, Rectangle, Vector2, Color);
void DrawTexturePro(Texture2D, Rectangle, Rectangle, Vector2, float, Color);
Texture2D LoadTexture(const char *);
void UnloadTexture(Texture2D);
bool IsKeyDown(int);
bool IsKeyPressed(int);
int GetKeyPressed(void);
int GetRandomValue(int, int);
float GetFrameTime(void);
double GetTime(void);
int GetScreenWidth(void);
int GetScreenHeight(void);
int MeasureText(const char *, int);
const char *TextFormat(const char *, ...);
bool CheckCollisionRecs(Rectangle, Rectangle);
bool CheckCollisionPointRec(Vector2, Rectangle);
Color Fade(Color, float);
"""

CXXOPTS = r"""#pragma once
// minimal cxxopts stand-in written by bench/realcode/run.py
#include <memory>
#include <string>
namespace cxxopts {
struct OptionValue {
  template <class T> const T &as() const;
  std::size_t count() const;
};
class ParseResult {
public:
  const OptionValue &operator[](const std::string &) const;
  std::size_t count(const std::string &) const;
};
template <class T> std::shared_ptr<OptionValue> value();
template <class T> std::shared_ptr<OptionValue> value(T &);
struct OptionAdder {
  template <class... A> OptionAdder &operator()(A &&...);
};
class Options {
public:
  template <class... A> Options(A &&...);
  OptionAdder add_options(std::string = "");
  ParseResult parse(int, const char *const *);
  ParseResult parse(int &, char **&);
  std::string help(...) const;
};
} // namespace cxxopts
"""

BOOST_LOG = r"""#pragma once
// minimal Boost.Log stand-in written by bench/realcode/run.py
#include <iostream>
#define BOOST_LOG_TRIVIAL(level) std::clog
"""


TQDM = r"""#pragma once
// minimal tqdm-cpp stand-in written by bench/realcode/run.py: a range to
// iterate (the progress bar's own output is irrelevant here)
#include <vector>
namespace tqdm {
template <typename T> std::vector<T> range(T begin, T end);
template <typename T> std::vector<T> range(T end);
template <typename C> C &tqdm(C &container);
} // namespace tqdm
"""


def guarded(library, text):
    """One library's stand-in, written under each of its header names (a
    file including <opencv2/opencv.hpp> and <opencv2/imgproc/imgproc.hpp>
    gets two copies): `#pragma once` is per file, so a guard shared by the
    copies keeps the second from redefining every declaration."""
    guard = f"DEVCOPY_STUB_{library}"
    return f"#ifndef {guard}\n#define {guard}\n{text}#endif\n"


def stub_text(name):
    """The stand-in for the missing header `name`, or None for an empty stub."""
    base = name.split("/")[-1]
    if name.startswith(("opencv2/", "opencv/")) or base in ("cv.h", "cv.hpp", "highgui.h"):
        return guarded("OPENCV", OPENCV)
    if base in ("raylib.h", "raymath.h", "rlgl.h"):
        return guarded("RAYLIB", RAYLIB)
    if base in ("cxxopts.hpp", "cxxopts.h"):
        return guarded("CXXOPTS", CXXOPTS)
    if name in ("tqdm/tqdm.h", "tqdm.h", "tqdm.hpp"):
        return guarded("TQDM", TQDM)
    if name.startswith("boost/log/"):
        return guarded("BOOST_LOG", BOOST_LOG)
    # A CMake-generated export header (generate_export_header): its macros.
    m = re.fullmatch(r"([A-Za-z_][A-Za-z0-9_]*)_export\.h", base)
    if m:
        p = m.group(1).upper()
        return f"#pragma once\n#define {p}_EXPORT\n#define {p}_NO_EXPORT\n#define {p}_DEPRECATED\n"
    return None
